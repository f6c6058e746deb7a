// `npm start` as a newcomer runs it, for the tests in this folder: a child process with free ports and
// a data folder of its own, nothing configured, stopped with SIGINT as a terminal's Ctrl-C would.
import { execFile, spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import type { ExecutionContext } from 'ava';
import { nodeScript } from '../../dev/proc';
import { freePort } from '../../dev/ports';

const root = path.resolve(__dirname, '../..');

/** The dev tokens and key `npm start` configures when nothing is set (dev/start.ts). */
export const DEV_ADMIN_TOKEN = 'dev-admin-token';
export const EMULATOR_KEY = 'sk_test_emulator';

export interface Ports {
  api: number;
  temporal: number;
  ui: number;
  emulator: number;
  workerMetrics: number;
}

/** Ports that `npm start` listens on; the same ones are kept for a restart. */
export async function freePorts(): Promise<Ports> {
  return {
    api: await freePort(),
    temporal: await freePort(),
    ui: await freePort(),
    emulator: await freePort(),
    workerMetrics: await freePort(),
  };
}

/**
 * A buyer token for `buyerId`, as the README's quick start gets one: `npm run buyer-token -- <id>`
 * signs it with the development secret `npm start` keeps in the data folder. Returns the header.
 */
export function buyerAuth(env: NodeJS.ProcessEnv, buyerId: string): Promise<{ authorization: string }> {
  return new Promise((resolve, reject) => {
    execFile(
      process.execPath,
      [...nodeScript(path.join(root, 'ops/buyer-token.ts')), buyerId],
      { cwd: root, env: { ...env, BUYER_TOKEN_SECRET: '' } },
      (err, stdout, stderr) => {
        if (err) reject(new Error(`npm run buyer-token -- ${buyerId}: ${stderr || err.message}`));
        else resolve({ authorization: `Bearer ${stdout.trim()}` });
      },
    );
  });
}

/** A fresh data folder (FLASH_SALE_DATA_DIR) that the `postgres` user can enter when this runs as root. */
export function makeDataDir(prefix: string): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  fs.chmodSync(dir, 0o711);
  return dir;
}

/** The environment of a first run: these ports and folder, and none of the services `npm test` set up. */
export function startEnv(dataDir: string, ports: Ports, extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    FLASH_SALE_DATA_DIR: dataDir,
    PORT: String(ports.api),
    TEMPORAL_PORT: String(ports.temporal),
    TEMPORAL_UI_PORT: String(ports.ui),
    STRIPE_EMULATOR_PORT: String(ports.emulator),
    WORKER_METRICS_PORT: String(ports.workerMetrics),
    ...extra,
  };
  // npm test points DATABASE_URL and TEMPORAL_ADDRESS at its own stack; a first run has neither.
  for (const name of [
    'DATABASE_URL',
    'TEMPORAL_ADDRESS',
    'TEMPORAL_NAMESPACE',
    'STRIPE_SECRET_KEY',
    'STRIPE_WEBHOOK_SECRET',
    'STRIPE_EMULATOR_STATE_FILE',
    'BUYER_TOKEN_SECRET',
    // A first run bundles its workflows itself.
    'WORKFLOW_BUNDLE_PATH',
  ]) {
    if (!(name in extra)) delete env[name];
  }
  return env;
}

export interface Launched {
  /** Everything the launcher and its children printed so far. */
  output(): string;
  /** The port of the Postgres it started, once it has printed it. */
  postgresPort(): number | undefined;
  /** Resolves when the API answers /readyz with 200. */
  ready(timeoutMs?: number): Promise<void>;
  /** SIGINT, then waits for the launcher to exit (SIGKILL after `timeoutMs`): its exit code, or 'hung'. */
  stop(timeoutMs?: number): Promise<number | null | 'hung'>;
}

/** Runs dev/start.ts (what `npm start` runs) with this environment. */
export function launch(env: NodeJS.ProcessEnv): Launched {
  const child = spawn(process.execPath, nodeScript('dev/start.ts'), {
    cwd: root,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.on('data', (d: Buffer) => (output += d.toString()));
  child.stderr.on('data', (d: Buffer) => (output += d.toString()));
  let exitCode: number | null | undefined;
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve((exitCode = code))));
  const api = `http://127.0.0.1:${env.PORT}`;
  return {
    output: () => output,
    postgresPort() {
      const match = /Postgres +postgres:\/\/[^@]+@127\.0\.0\.1:(\d+)\//.exec(output);
      return match ? Number(match[1]) : undefined;
    },
    async ready(timeoutMs = 120_000) {
      // A launcher that gave up (a part failed to start) is not waited for until the timeout.
      const state = await until('the API to be ready', timeoutMs, async () => {
        if (exitCode !== undefined) return 'exited';
        return (await fetch(`${api}/readyz`)).ok ? 'ready' : undefined;
      });
      if (state === 'exited')
        throw new Error(`npm start exited (${exitCode}) before it was ready:\n${output.slice(-3000)}`);
    },
    async stop(timeoutMs = 60_000) {
      child.kill('SIGINT');
      const code = await Promise.race([
        exited,
        new Promise<'hung'>((r) => setTimeout(() => r('hung'), timeoutMs).unref()),
      ]);
      if (code === 'hung') child.kill('SIGKILL');
      return code;
    },
  };
}

/** Stops the launcher as Ctrl-C does, and checks that it exited 0 and every part it started let go of its port. */
export async function stopAll(t: ExecutionContext, service: Launched, ports: Ports): Promise<void> {
  const postgres = service.postgresPort();
  const code = await service.stop();
  // The lines about how it stopped (a part that exited first or failed, a stop that failed, the
  // signal each part was stopped by), wherever they fell in its output, then the tail of everything.
  const output = service.output();
  const why = output
    .split('\n')
    .filter((l) => /exited|failed|did not stop|stopping|FATAL|ERROR|Error\b|SIGTERM|SIGINT/.test(l));
  t.is(code, 0, `${why.join('\n')}\n…\n${output.slice(-3000)}`);
  for (const port of [
    ports.api,
    ports.temporal,
    ports.ui,
    ports.emulator,
    ports.workerMetrics,
    ...(postgres ? [postgres] : []),
  ]) {
    t.false(await portOpen(port), `port ${port} is closed again`);
  }
}

/** Polls `probe` every 250 ms until it gives a value (a throw counts as not yet). */
export async function until<T>(what: string, timeoutMs: number, probe: () => Promise<T | undefined>): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe().catch(() => undefined);
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

export function portOpen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

/** One JSON call: the status and the parsed body (null when there is none). */
export async function call(
  method: string,
  url: string,
  body?: unknown,
  headers: Record<string, string> = {},
): Promise<{ status: number; body: any }> {
  const res = await fetch(url, {
    method,
    headers: { ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : null };
}
