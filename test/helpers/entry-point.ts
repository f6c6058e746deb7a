import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import net, { type AddressInfo } from 'node:net';
import path from 'node:path';
import { serviceEnv, systemSecrets } from '../../dev/local-system';
import { nodeScript } from '../../dev/proc';

// One of the project's entry points (api/main.ts, worker/main.ts, an ops/ CLI) as a child process,
// as `npm run` starts it: for the tests of what a process does at start, refusing or starting.

const repoRoot = path.join(__dirname, '../..');

export interface Ended {
  code: number | null;
  stdout: string;
  stderr: string;
  /** The process printed its ready line (it was then stopped): its configuration was accepted. */
  ready: boolean;
}

/** What the API and the worker print once they serve (with PORT=0: the port asked for). */
export const API_READY = /listening on http:\/\/127\.0\.0\.1:0/;
export const WORKER_READY = /polling task queues/;

/**
 * Runs an entry point (`args`: the script and its arguments, from the repository's root) with
 * `env` over this process's environment until it exits, or until it prints `readyLine` (then it is
 * stopped with SIGTERM). At most 90 s.
 */
export function runEntryPoint(args: string[], env: Record<string, string>, readyLine?: RegExp): Promise<Ended> {
  const child = spawn(process.execPath, [...nodeScript(args[0]), ...args.slice(1)], {
    cwd: repoRoot,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  let ready = false;
  const safety = setTimeout(() => child.kill('SIGKILL'), 90_000);
  let stopping: NodeJS.Timeout | undefined;
  child.stdout.on('data', (d: Buffer) => {
    stdout += d.toString();
    if (!ready && readyLine?.test(stdout)) {
      ready = true;
      child.kill('SIGTERM');
      stopping = setTimeout(() => child.kill('SIGKILL'), 15_000);
    }
  });
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  return new Promise((resolve) =>
    child.on('close', (code) => {
      clearTimeout(safety);
      clearTimeout(stopping);
      resolve({ code, stdout, stderr, ready });
    }),
  );
}

/**
 * What `api/main.ts` and `worker/main.ts` need against the suite's Postgres and Temporal (the ones
 * `npm test` started), on a task queue of their own, with development secrets named after `name`;
 * Stripe and the public URL point nowhere (nothing here reaches them).
 */
export function suiteServiceEnv(name: string): Record<string, string> {
  return serviceEnv({
    databaseUrl: process.env.DATABASE_URL!,
    temporalAddress: process.env.TEMPORAL_ADDRESS!,
    temporalNamespace: process.env.TEMPORAL_NAMESPACE ?? 'default',
    taskQueue: `${name}-${randomUUID()}`,
    emulatorUrl: 'http://127.0.0.1:9',
    publicUrl: 'http://127.0.0.1:9',
    secrets: systemSecrets(name),
  }) as Record<string, string>;
}

/** A loopback port nothing listens on now: connecting is refused, and a process told to may listen on it. */
export async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}
