// The whole service on throwaway ports, for the tools that measure or rehearse it (`bench:crowd`,
// `drill`): Postgres and Temporal from dev/stack.ts (or DATABASE_URL / TEMPORAL_ADDRESS), then the
// payments emulator, the worker and the API as child processes, so the API runs alone on its event
// loop as in production. `npm start` is the long-lived variant with fixed ports and `.data/`.
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { nodeScript, spawnChild, type ChildHandle, type ExitInfo, type Log } from './proc';
import { freePort } from './ports';
import { startStack } from './stack';

const READY_TIMEOUT_MS = 90_000;
const root = path.resolve(__dirname, '..');
/** The payments emulator's entry point, in its workspace package (packages/stripe-emulator). */
export const EMULATOR_MAIN = require.resolve('@flash-sale/stripe-emulator/main');

export interface LocalSystem {
  base: string;
  adminToken: string;
  /** The HS256 secret the API verifies buyer tokens with. */
  buyerSecret: string;
  emulatorUrl: string;
  databaseUrl: string;
  temporalAddress: string;
  temporalNamespace: string;
  taskQueue: string;
  apiPid: number;
  /** Stops the API, the worker, the emulator, then Temporal and Postgres, and removes the temp dir; never throws. */
  stop(): Promise<void>;
}

export interface LocalSystemOptions {
  /** Prefix of the temp dir, the task queue and the secrets (`bench-crowd`, `drill`). */
  name: string;
  /** The children's and servers' output lines, when the caller wants them. */
  log?: Log;
  /** Progress of the start-up, one line per step. */
  say?: Log;
  /** Aborting stops what has started and rejects. */
  signal?: AbortSignal;
  /** Called when a child exits after it was ready and before stop() (a crash mid-run). */
  onUnexpectedExit?: (name: string, info: ExitInfo, output: string) => void;
  /** More environment for the API (e.g. its rate limits). */
  apiEnv?: NodeJS.ProcessEnv;
  /** More environment for the API and the worker both (e.g. the Stripe budget, STRIPE_MAX_REQUESTS_PER_SECOND). */
  env?: NodeJS.ProcessEnv;
  /** More environment for the payments emulator (e.g. STRIPE_EMULATOR_RATE_LIMIT). */
  emulatorEnv?: NodeJS.ProcessEnv;
}

/** The secrets one throwaway system's API, worker and emulator share, derived from its name. */
export interface SystemSecrets {
  admin: string;
  support: string;
  /** The HS256 secret of buyer tokens. */
  buyer: string;
  webhook: string;
  stripeKey: string;
  /** The bot check's HMAC key (BOT_CHECK_SECRET). */
  botCheck: string;
}

export function systemSecrets(name: string): SystemSecrets {
  const word = name.replace(/\W/g, '_');
  return {
    admin: `${name}-admin`,
    support: `${name}-support`,
    buyer: `${name}-buyer-token-secret-${randomUUID()}`,
    webhook: `whsec_${word}`,
    stripeKey: `sk_test_${word}`,
    botCheck: `${name}-bot-check-secret-${randomUUID()}`,
  };
}

/** What the worker and the API share: where Postgres, Temporal and the emulator are, and the secrets. */
export function serviceEnv(o: {
  databaseUrl: string;
  temporalAddress: string;
  temporalNamespace: string;
  taskQueue: string;
  emulatorUrl: string;
  /** Where buyers reach the API (the balancer, when there is one). */
  publicUrl: string;
  secrets: SystemSecrets;
}): NodeJS.ProcessEnv {
  return {
    DATABASE_URL: o.databaseUrl,
    TEMPORAL_ADDRESS: o.temporalAddress,
    TEMPORAL_NAMESPACE: o.temporalNamespace,
    TASK_QUEUE: o.taskQueue,
    STRIPE_SECRET_KEY: o.secrets.stripeKey,
    STRIPE_API_URL: o.emulatorUrl,
    STRIPE_EMULATOR: '1',
    STRIPE_WEBHOOK_SECRET: o.secrets.webhook,
    ADMIN_TOKEN: o.secrets.admin,
    SUPPORT_TOKEN: o.secrets.support,
    BUYER_TOKEN_SECRET: o.secrets.buyer,
    BOT_CHECK_SECRET: o.secrets.botCheck,
    HOST: '127.0.0.1',
    PUBLIC_URL: o.publicUrl,
  };
}

export interface NodePart {
  child: ChildHandle;
  /** Resolves when the process printed its ready line; rejects when it exits first or takes too long. */
  ready: Promise<void>;
}

/** A process of this repository (`api/main.ts`, …, or an absolute path) running the TypeScript source. */
export function startNode(
  name: string,
  script: string,
  env: NodeJS.ProcessEnv,
  readyLine: RegExp,
  log: Log | undefined,
  /** Its output goes here, and to `log` as the file grows (dev/proc.ts); else through a pipe to `log`. */
  logFile?: string,
): NodePart {
  let markReady = (): void => {};
  const seen = new Promise<void>((resolve) => (markReady = resolve));
  const child = spawnChild({
    name,
    command: process.execPath,
    args: nodeScript(path.resolve(root, script)),
    env: { ...process.env, ...env },
    cwd: root,
    ...(logFile ? { logFile } : {}),
    onLine: (line) => {
      log?.(`[${name}] ${line}`);
      if (readyLine.test(line)) markReady();
    },
    deathSignal: 'SIGTERM',
    stopSteps: [
      ['SIGTERM', 15_000],
      ['SIGKILL', 2000],
    ],
  });
  let timer: NodeJS.Timeout | undefined;
  const failed = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new Error(`${name} was not ready after ${READY_TIMEOUT_MS / 1000}s:\n${child.output()}`)),
      READY_TIMEOUT_MS,
    );
    void child.exited.then((info) =>
      reject(
        new Error(
          `${name} exited (${info.error?.message ?? info.code ?? info.signal}) before it was ready:\n${child.output()}`,
        ),
      ),
    );
  });
  const ready = Promise.race([seen, failed]).finally(() => clearTimeout(timer));
  ready.catch(() => {});
  return { child, ready };
}

/** The payments emulator, signing its webhooks with the system's secret and sending them to `webhookUrl`. */
export function startEmulatorProcess(o: {
  port: number;
  webhookUrl: string;
  secrets: SystemSecrets;
  /** More environment for it (STRIPE_EMULATOR_RATE_LIMIT, say). */
  env?: NodeJS.ProcessEnv;
  log?: Log;
  logFile?: string;
}): NodePart {
  const env = {
    STRIPE_EMULATOR_PORT: String(o.port),
    STRIPE_EMULATOR_HOST: '127.0.0.1',
    STRIPE_WEBHOOK_SECRET: o.secrets.webhook,
    STRIPE_EMULATOR_WEBHOOK_URL: o.webhookUrl,
    ...o.env,
  };
  return startNode('emulator', EMULATOR_MAIN, env, /Stripe API on/, o.log, o.logFile);
}

export function startWorkerProcess(name: string, env: NodeJS.ProcessEnv, log?: Log, logFile?: string): NodePart {
  return startNode(name, 'worker/main.ts', env, /polling task queue/, log, logFile);
}

/** An API on `port`; no drain pause at its end (SHUTDOWN_GRACE_MS 0) unless `env` says otherwise. */
export function startApiProcess(
  name: string,
  port: number,
  env: NodeJS.ProcessEnv,
  log?: Log,
  logFile?: string,
): NodePart {
  const apiEnv = { SHUTDOWN_GRACE_MS: '0', ...env, PORT: String(port) };
  return startNode(name, 'api/main.ts', apiEnv, /listening on/, log, logFile);
}

/** Until every part is ready; rejects with the first that fails, or when `signal` aborts. */
export async function allReady(parts: NodePart[], signal?: AbortSignal): Promise<void> {
  const aborted = new Promise<never>((_, reject) => {
    if (signal?.aborted) reject(signal.reason as Error);
    signal?.addEventListener('abort', () => reject(signal.reason as Error), { once: true });
  });
  aborted.catch(() => {});
  await Promise.race([Promise.all(parts.map((p) => p.ready)), aborted]);
}

/** Starts everything; if a part fails (or `signal` aborts), what started is stopped and this rejects. */
export async function startLocalSystem(opts: LocalSystemOptions): Promise<LocalSystem> {
  const dir = mkdtempSync(path.join(os.tmpdir(), `${opts.name}-`));
  const children: ChildHandle[] = [];
  let stack: Awaited<ReturnType<typeof startStack>> | undefined;
  let stopping = false;
  const stop = async (): Promise<void> => {
    stopping = true;
    for (const child of [...children].reverse()) await child.stop();
    children.length = 0;
    await stack?.stop();
    stack = undefined;
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    opts.say?.('starting Postgres and the Temporal dev server...');
    stack = await startStack({ dataDir: dir, persistent: false, log: opts.log ?? (() => {}), signal: opts.signal });
    const [apiPort, emulatorPort] = [await freePort(), await freePort()];
    const base = `http://127.0.0.1:${apiPort}`;
    const emulatorUrl = `http://127.0.0.1:${emulatorPort}`;
    const secrets = systemSecrets(opts.name);
    const taskQueue = `${opts.name}-${randomUUID()}`;
    const shared = { ...serviceEnv({ ...stack, taskQueue, emulatorUrl, publicUrl: base, secrets }), ...opts.env };
    opts.say?.('starting the payments emulator, the worker and the API (child processes)...');
    const parts = [
      startEmulatorProcess({
        port: emulatorPort,
        webhookUrl: `${base}/v1/webhooks/stripe`,
        secrets,
        env: opts.emulatorEnv,
        log: opts.log,
      }),
      startWorkerProcess('worker', shared, opts.log),
      // No drain pause at the end of the run: nothing routes traffic to this API but the tool.
      startApiProcess('api', apiPort, { ...shared, ...opts.apiEnv }, opts.log),
    ];
    children.push(...parts.map((p) => p.child));
    await allReady(parts, opts.signal);
    for (const child of children) {
      void child.exited.then((info) => {
        if (!stopping) opts.onUnexpectedExit?.(child.name, info, child.output());
      });
    }
    return {
      base,
      adminToken: secrets.admin,
      buyerSecret: secrets.buyer,
      emulatorUrl,
      databaseUrl: stack.databaseUrl,
      temporalAddress: stack.temporalAddress,
      temporalNamespace: stack.temporalNamespace,
      taskQueue,
      apiPid: parts[2].child.pid,
      stop,
    };
  } catch (err) {
    await stop();
    throw err;
  }
}
