import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { ExecutionContext } from 'ava';
import type { ProductTerms } from '../../vocabulary';
import { createLogger } from '../../config/log';
import { serveTelemetry } from '../../worker/telemetry';

// Fixtures both tiers share: plain values, files and a worker telemetry server of its own; nothing
// that needs Postgres, Temporal or the emulator.

/** A product's terms for a rule's test: a plain product, with the fields the test gives. */
export const productTerms = (t: Partial<ProductTerms>): ProductTerms => ({
  name: 'Rule test',
  priceCents: 100,
  currency: 'usd',
  holdSeconds: 600,
  hasUnits: false,
  ...t,
});

/** A Temporal TOML profile file (TEMPORAL_CONFIG_FILE), removed when the test ends. */
export function profileFile(t: ExecutionContext, toml: string): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'temporal-profile-'));
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  const file = path.join(dir, 'temporal.toml');
  fs.writeFileSync(file, toml);
  return file;
}

/** A live Stripe key, as production is given one (never sent anywhere by the tests). */
export const LIVE_KEY = `sk_live_${'x'.repeat(24)}`;

const fresh = (): string => randomBytes(32).toString('hex');

/** A production environment's key and secrets, each of its own (its connections are the caller's). */
export function liveSecrets(dataDir: string): Record<string, string> {
  return {
    STRIPE_SECRET_KEY: LIVE_KEY,
    STRIPE_API_URL: '',
    STRIPE_EMULATOR: '',
    DEV_SIGN_IN: '',
    STRIPE_WEBHOOK_SECRET: `whsec_${fresh()}`,
    ADMIN_TOKEN: fresh(),
    SUPPORT_TOKEN: fresh(),
    METRICS_TOKEN: fresh(),
    BOT_CHECK_SECRET: fresh(),
    BUYER_TOKEN_SECRET: fresh(),
    ROOM_TOKEN_SECRET: fresh(),
    HOST: '127.0.0.1',
    PORT: '0',
    WORKER_METRICS_PORT: '0',
    SHUTDOWN_GRACE_MS: '0',
    FLASH_SALE_DATA_DIR: dataDir,
  };
}

/** The least a worker's configuration needs (a test key, any Postgres URL). */
export const WORKER_ENV = { DATABASE_URL: 'postgres://x@127.0.0.1/db', STRIPE_SECRET_KEY: 'sk_test_x' };

/** The least an API's configuration needs: the worker's, the webhook secret and every token long enough. */
export const API_ENV = {
  ...WORKER_ENV,
  STRIPE_WEBHOOK_SECRET: 'whsec_x',
  ADMIN_TOKEN: 'a'.repeat(32),
  SUPPORT_TOKEN: 's'.repeat(32),
  BUYER_TOKEN_SECRET: 'b'.repeat(32),
  BOT_CHECK_SECRET: 'c'.repeat(32),
};

/**
 * The worker's /healthz and /metrics on a free loopback port, as a RUNNING worker serves them, with
 * no SDK metrics behind it and a silent log; closed at teardown.
 */
export async function testTelemetry(t: ExecutionContext) {
  const telemetry = await serveTelemetry({
    port: 0,
    host: '127.0.0.1',
    sdkMetricsUrl: 'http://127.0.0.1:9/metrics',
    state: () => 'RUNNING',
    logger: createLogger('worker', { LOG_LEVEL: 'silent' }),
  });
  t.teardown(() => telemetry.close());
  return telemetry;
}
