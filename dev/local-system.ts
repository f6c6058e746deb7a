// The whole service on throwaway ports, for the tools that measure or rehearse it (`bench:crowd`,
// `drill`): Postgres and Temporal from dev/stack.ts (or DATABASE_URL / TEMPORAL_ADDRESS), then the
// payments emulator, the worker and the API as child processes, so the API runs alone on its event
// loop as in production. `npm start` is the long-lived variant with fixed ports and `.data/`.
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { freePort, spawnChild, type ChildHandle, type ExitInfo, type Log } from './proc';
import { startStack } from './stack';

const READY_TIMEOUT_MS = 90_000;
const root = path.resolve(__dirname, '..');

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

function startNode(
  name: string,
  script: string,
  env: NodeJS.ProcessEnv,
  readyLine: RegExp,
  log: Log | undefined,
): { child: ChildHandle; ready: Promise<void> } {
  let markReady = (): void => {};
  const seen = new Promise<void>((resolve) => (markReady = resolve));
  const child = spawnChild({
    name,
    command: process.execPath,
    args: ['--import', 'tsx', path.join(root, script)],
    env: { ...process.env, ...env },
    cwd: root,
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
    const secrets = {
      admin: `${opts.name}-admin`,
      buyer: `${opts.name}-buyer-token-secret-${randomUUID()}`,
      webhook: `whsec_${opts.name.replace(/\W/g, '_')}`,
    };
    const taskQueue = `${opts.name}-${randomUUID()}`;
    const shared: NodeJS.ProcessEnv = {
      DATABASE_URL: stack.databaseUrl,
      TEMPORAL_ADDRESS: stack.temporalAddress,
      TEMPORAL_NAMESPACE: stack.temporalNamespace,
      TASK_QUEUE: taskQueue,
      STRIPE_SECRET_KEY: `sk_test_${opts.name.replace(/\W/g, '_')}`,
      STRIPE_API_URL: emulatorUrl,
      STRIPE_EMULATOR: '1',
      STRIPE_WEBHOOK_SECRET: secrets.webhook,
      ADMIN_TOKEN: secrets.admin,
      SUPPORT_TOKEN: `${opts.name}-support`,
      BUYER_TOKEN_SECRET: secrets.buyer,
      BOT_CHECK_SECRET: `${opts.name}-bot-check-secret-${randomUUID()}`,
      HOST: '127.0.0.1',
      PORT: String(apiPort),
      PUBLIC_URL: base,
      ...opts.env,
    };
    opts.say?.('starting the payments emulator, the worker and the API (child processes)...');
    const parts = [
      startNode(
        'emulator',
        'dev/emulator/main.ts',
        {
          STRIPE_EMULATOR_PORT: String(emulatorPort),
          STRIPE_EMULATOR_HOST: '127.0.0.1',
          STRIPE_WEBHOOK_SECRET: secrets.webhook,
          STRIPE_EMULATOR_WEBHOOK_URL: `${base}/v1/webhooks/stripe`,
          PORT: String(apiPort),
          ...opts.emulatorEnv,
        },
        /Stripe API on/,
        opts.log,
      ),
      startNode('worker', 'worker/main.ts', shared, /polling task queue/, opts.log),
      // No drain pause at the end of the run: nothing routes traffic to this API but the tool.
      startNode('api', 'api/main.ts', { ...shared, SHUTDOWN_GRACE_MS: '0', ...opts.apiEnv }, /listening on/, opts.log),
    ];
    children.push(...parts.map((p) => p.child));
    const aborted = new Promise<never>((_, reject) => {
      if (opts.signal?.aborted) reject(opts.signal.reason as Error);
      opts.signal?.addEventListener('abort', () => reject(opts.signal!.reason as Error), { once: true });
    });
    aborted.catch(() => {});
    await Promise.race([Promise.all(parts.map((p) => p.ready)), aborted]);
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
