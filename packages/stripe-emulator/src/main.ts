#!/usr/bin/env -S node --import tsx
import { devOnlyRefusal } from './dev-only';
import { DEFAULT_WEBHOOK_SECRET, startEmulator } from './index';
import { createLogger, exitOnFailure, type Logger } from './log';
import { parseRateLimit } from './rate-limit';

let logger: Logger | undefined;

/** Exit code when the environment does not say this is a development machine. */
const EXIT_NOT_DEV = 2;

/** `stripe-emulator` (`npm start` here, `npm run emulator` in the service), configured from the environment. */
async function main(): Promise<void> {
  const log = (logger = createLogger('payments-emulator'));
  const host = process.env.STRIPE_EMULATOR_HOST || '127.0.0.1';
  const refusal = devOnlyRefusal(process.env, host);
  if (refusal) {
    log.fatal(refusal);
    process.exit(EXIT_NOT_DEV);
  }
  const port = parsePort(process.env.STRIPE_EMULATOR_PORT, 'STRIPE_EMULATOR_PORT', 12111);
  const appPort = parsePort(process.env.PORT, 'PORT', 3000);
  const webhookSecret = process.env.STRIPE_WEBHOOK_SECRET || DEFAULT_WEBHOOK_SECRET;
  const webhookUrl = process.env.STRIPE_EMULATOR_WEBHOOK_URL || `http://127.0.0.1:${appPort}/v1/webhooks/stripe`;
  const publicUrl = process.env.STRIPE_EMULATOR_PUBLIC_URL || undefined;
  const stateFile = process.env.STRIPE_EMULATOR_STATE_FILE || undefined;
  const rateLimit = parseRateLimit(process.env.STRIPE_EMULATOR_RATE_LIMIT);

  const emulator = await startEmulator({
    port,
    host,
    webhookUrl,
    webhookSecret,
    publicUrl,
    stateFile,
    rateLimit,
    log: (line) => log.info(line),
  });
  log.info(`Stripe API on ${emulator.url} (stripe-node: host/port of this URL, protocol http)`);
  log.info(`webhooks to ${webhookUrl}`);
  log.info(
    rateLimit.accountPerSecond || rateLimit.endpointPerSecond
      ? `rate limits as Stripe's: ${rateLimit.accountPerSecond || 'no limit'}/s for the account, ${rateLimit.endpointPerSecond || 'no limit'}/s per endpoint (STRIPE_EMULATOR_RATE_LIMIT)`
      : 'no rate limits (STRIPE_EMULATOR_RATE_LIMIT=0)',
  );
  log.info(
    emulator.stateFile
      ? `state kept in ${emulator.stateFile}`
      : 'state in memory only (set STRIPE_EMULATOR_STATE_FILE to keep it across restarts)',
  );

  let stopping = false;
  const stop = (signal: string): void => {
    if (stopping) return;
    stopping = true;
    log.info(`${signal}: stopping`);
    emulator.close().then(
      () => process.exit(0),
      (err: unknown) => {
        log.error({ err }, 'failed to stop cleanly');
        process.exit(1);
      },
    );
  };
  process.once('SIGINT', () => stop('SIGINT'));
  process.once('SIGTERM', () => stop('SIGTERM'));
}

function parsePort(value: string | undefined, name: string, fallback: number): number {
  if (value === undefined || value === '') return fallback;
  const port = Number(value);
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    throw new Error(`${name} must be a port number (0-65535), got "${value}".`);
  }
  return port;
}

main().catch((err: unknown) => exitOnFailure(logger, err));
