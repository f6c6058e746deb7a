// `npm start`: the whole service on this machine with nothing configured. Its own Postgres (data in
// .data/), the Temporal dev server (state in .data/temporal.db, Web UI), the payments emulator
// (unless STRIPE_SECRET_KEY is set), the worker and the API. Ctrl-C stops everything, in order.
import path from 'node:path';
import { prettyFactory } from 'pino-pretty';
import { devBuyerSecret } from '../config/buyer-tokens';
import { isLiveKey } from '../config';
import { DEV_DEFAULTS, devDataDir } from '../config/dev-secrets';
import { variable } from '../config/variables';
import { nodeScript, spawnChild, type ChildHandle } from './proc';
import { startStack, type Stack } from './stack';

const root = path.resolve(__dirname, '..');
/** The payments emulator's entry point, in its workspace package (packages/stripe-emulator). */
const EMULATOR_MAIN = require.resolve('@flash-sale/stripe-emulator/main');
// The launcher's own lines (progress, the banner) are for the person at the terminal: plain text.
const log = (line: string): void => console.log(line);
/** The services log JSON (config/log.ts); here each line is shown as one readable line. */
const pretty = prettyFactory({
  colorize: process.stdout.isTTY,
  singleLine: true,
  translateTime: 'SYS:HH:MM:ss.l',
  ignore: 'pid,hostname,service',
});

const env = process.env;
/** A variable as set, else its default from the configuration table. */
const setOr = (name: string): string => env[name] || String(variable(name).default);
const port = setOr('PORT');
const emulatorPort = setOr('STRIPE_EMULATOR_PORT');
const workerMetricsPort = setOr('WORKER_METRICS_PORT');
const useEmulator = !env.STRIPE_SECRET_KEY;
const local = {
  ADMIN_TOKEN: env.ADMIN_TOKEN || DEV_DEFAULTS.ADMIN_TOKEN,
  SUPPORT_TOKEN: env.SUPPORT_TOKEN || DEV_DEFAULTS.SUPPORT_TOKEN,
  BOT_CHECK_SECRET: env.BOT_CHECK_SECRET || DEV_DEFAULTS.BOT_CHECK_SECRET,
  STRIPE_SECRET_KEY: env.STRIPE_SECRET_KEY || 'sk_test_emulator',
  STRIPE_WEBHOOK_SECRET: env.STRIPE_WEBHOOK_SECRET || DEV_DEFAULTS.STRIPE_WEBHOOK_SECRET,
};

function node(name: string, script: string, extraEnv: NodeJS.ProcessEnv): ChildHandle {
  return spawnChild({
    name,
    command: process.execPath,
    args: nodeScript(path.resolve(root, script)),
    env: { ...process.env, ...extraEnv },
    cwd: root,
    onLine: (line) => console.log(`[${name}] ${line.startsWith('{') ? pretty(line).trimEnd() : line}`),
    deathSignal: 'SIGTERM',
    stopSteps: [
      ['SIGTERM', 15_000],
      ['SIGKILL', 2000],
    ],
  });
}

async function main(): Promise<void> {
  if (!useEmulator && !env.STRIPE_WEBHOOK_SECRET) {
    // With a real key, webhooks come from Stripe and must verify with that endpoint's secret.
    throw new Error('STRIPE_SECRET_KEY is set, so Stripe is real: set STRIPE_WEBHOOK_SECRET (whsec_...) too');
  }
  const devDefaults = ['ADMIN_TOKEN', 'SUPPORT_TOKEN', 'BOT_CHECK_SECRET'].filter((name) => !env[name]);
  if (!env.BUYER_TOKEN_SECRET && !env.BUYER_JWKS_URL) devDefaults.push('BUYER_TOKEN_SECRET');
  if (isLiveKey(local.STRIPE_SECRET_KEY) && devDefaults.length) {
    // Real money: no token anyone can read in this file or in a log.
    throw new Error(`STRIPE_SECRET_KEY is a live key: set ${devDefaults.join(', ')} (no development defaults)`);
  }
  const children: ChildHandle[] = [];
  let stack: Stack | undefined;
  const aborter = new AbortController();
  let stopping = false;
  const stop = async (code: number) => {
    if (stopping) return;
    stopping = true;
    aborter.abort(new Error('stopping'));
    log('stopping: api, worker, emulator, then Temporal and Postgres');
    for (const child of [...children].reverse()) await child.stop();
    await stack?.stop();
    process.exit(code);
  };
  process.on('SIGINT', () => void stop(0));
  process.on('SIGTERM', () => void stop(0));

  const dataDir = devDataDir(env);
  stack = await startStack({
    dataDir,
    persistent: true,
    log,
    temporal: { port: Number(setOr('TEMPORAL_PORT')), uiPort: Number(setOr('TEMPORAL_UI_PORT')) },
    signal: aborter.signal,
  });
  const buyerTokens = env.BUYER_JWKS_URL
    ? { BUYER_JWKS_URL: env.BUYER_JWKS_URL }
    : { BUYER_TOKEN_SECRET: env.BUYER_TOKEN_SECRET || devBuyerSecret(dataDir) };
  const devSignIn = env.DEV_SIGN_IN
    ? env.DEV_SIGN_IN === '1'
    : !isLiveKey(local.STRIPE_SECRET_KEY) && !env.BUYER_JWKS_URL;
  const shared: NodeJS.ProcessEnv = {
    DATABASE_URL: stack.databaseUrl,
    TEMPORAL_ADDRESS: stack.temporalAddress,
    TEMPORAL_NAMESPACE: stack.temporalNamespace,
    PORT: port,
    PUBLIC_URL: env.PUBLIC_URL || `http://127.0.0.1:${port}`,
    ...local,
    ...buyerTokens,
    ...(useEmulator ? { STRIPE_API_URL: `http://127.0.0.1:${emulatorPort}`, STRIPE_EMULATOR: '1' } : {}),
    // The shop pages' sign-in by name, for the local run only: never beside a live key (the API refuses).
    ...(devSignIn ? { DEV_SIGN_IN: '1' } : {}),
    // Buyer notifications (refunded because sold out, ...) in the worker's log, unless a channel is set.
    ...(!env.NOTIFY_WEBHOOK_URL && !env.SMTP_URL ? { NOTIFY_LOG: env.NOTIFY_LOG || '1' } : {}),
  };
  if (useEmulator) {
    children.push(
      node('emulator', EMULATOR_MAIN, {
        STRIPE_EMULATOR_PORT: emulatorPort,
        STRIPE_WEBHOOK_SECRET: local.STRIPE_WEBHOOK_SECRET,
        STRIPE_EMULATOR_WEBHOOK_URL: `http://127.0.0.1:${port}/v1/webhooks/stripe`,
        // Sessions, payments and events outlive a restart, like Postgres and Temporal in the same folder.
        STRIPE_EMULATOR_STATE_FILE: env.STRIPE_EMULATOR_STATE_FILE || path.join(dataDir, 'stripe-emulator.json'),
        STRIPE_EMULATOR: '1',
      }),
    );
  }
  children.push(node('worker', 'worker/main.ts', { ...shared, WORKER_METRICS_PORT: workerMetricsPort }));
  children.push(node('api', 'api/main.ts', shared));
  for (const child of children) {
    void child.exited.then((info) => {
      if (!stopping) {
        console.error(`[${child.name}] exited (${info.code ?? info.signal}); stopping everything`);
        void stop(1);
      }
    });
  }

  log('');
  log('flash-sale checkout is starting:');
  log(`  API            http://127.0.0.1:${port}   (GET /readyz turns 200 when it is up)`);
  log(
    `  Shop pages     http://127.0.0.1:${port}/   (${devSignIn ? 'sign in with any name' : 'buyer token in the cookie'}; Checkout returns to /purchases/:id)`,
  );
  log(`  Worker         http://127.0.0.1:${workerMetricsPort}/metrics and /healthz`);
  if (stack.temporalUiUrl) log(`  Temporal UI    ${stack.temporalUiUrl}`);
  log(`  Temporal       ${stack.temporalAddress} (namespace ${stack.temporalNamespace})`);
  log(`  Postgres       ${stack.databaseUrl}`);
  log(
    useEmulator
      ? `  Stripe         payments emulator at http://127.0.0.1:${emulatorPort}`
      : '  Stripe         api.stripe.com (STRIPE_SECRET_KEY is set)',
  );
  if (!useEmulator) {
    // Stripe cannot reach 127.0.0.1: without a forwarder no webhook arrives and paid purchases lapse.
    log(`  Webhooks       Stripe cannot reach this machine: in another terminal run`);
    log(`                   stripe listen --forward-to localhost:${port}/v1/webhooks/stripe`);
    log(`                 and start with the whsec_... it prints as STRIPE_WEBHOOK_SECRET (docs/stripe.md)`);
  }
  log(`  Admin token    ${local.ADMIN_TOKEN}    Support token ${local.SUPPORT_TOKEN}`);
  log(
    buyerTokens.BUYER_TOKEN_SECRET
      ? `  Buyer tokens   BUYER_TOKEN_SECRET=${buyerTokens.BUYER_TOKEN_SECRET}${env.BUYER_TOKEN_SECRET ? '' : ` (dev secret, kept in ${path.join(dataDir, 'buyer-token-secret')})`}\n                 a token for buyer alice: npm run buyer-token -- alice`
      : `  Buyer tokens   verified with the keys of ${env.BUYER_JWKS_URL}`,
  );
  log('Ctrl-C stops everything.');
}

main().catch((err) => {
  console.error(`npm start failed: ${err instanceof Error ? err.message : err}`);
  process.exit(1);
});
