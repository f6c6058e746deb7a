import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { nodeScript } from '../../dev/proc';
import type { System } from './system';

/** One JSON log line of the worker. */
export type LogLine = Record<string, unknown> & { msg: string };

export interface WorkerProcess {
  child: ChildProcess;
  /** Every JSON line it printed so far (it keeps filling). */
  lines: LogLine[];
  /** Where the worker serves /healthz and /metrics (it was asked for a free port). */
  url: string;
}

/** One of the services (`api/main.ts`, `worker/main.ts`) in a child process, its JSON lines kept. */
export interface ServiceProcess {
  child: ChildProcess;
  /** Every JSON line it printed so far (it keeps filling). */
  lines: LogLine[];
}

/**
 * An entry point (`script`, from the repository's root) as a deployment runs it, in a child process,
 * with `env` over this process's environment. Resolves with the line that `ready` accepts, once it
 * prints one; rejects, with what it printed, if it exits before.
 */
export function startServiceProcess(
  script: string,
  env: Record<string, string>,
  ready: (line: LogLine) => boolean,
): Promise<ServiceProcess & { ready: LogLine }> {
  const child = spawn(process.execPath, nodeScript(path.join(__dirname, '../..', script)), {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const lines: LogLine[] = [];
  let rest = '';
  let raw = '';
  return new Promise((resolve, reject) => {
    child.stdout.on('data', (d: Buffer) => {
      raw += d.toString();
      const parts = (rest + d.toString()).split('\n');
      rest = parts.pop()!;
      for (const p of parts) {
        if (!p.trim()) continue;
        let line: LogLine;
        try {
          line = JSON.parse(p) as LogLine;
        } catch {
          continue; // not a log line (a library writing to stdout)
        }
        lines.push(line);
        if (ready(line)) resolve({ child, lines, ready: line });
      }
    });
    child.stderr.on('data', (d: Buffer) => (raw += d.toString()));
    child.on('exit', (code) => reject(new Error(`${script} exited ${code} before it was ready:\n${raw}`)));
  });
}

/**
 * `worker/main.ts` as a deployment runs it, in a child process (so a test can kill it), on this
 * system's task queue against its emulator, its metrics on a free port. Resolves once it polls.
 */
export async function startWorkerProcess(sys: System, env: Record<string, string> = {}): Promise<WorkerProcess> {
  const { child, lines, ready } = await startServiceProcess(
    'worker/main.ts',
    {
      DATABASE_URL: sys.databaseUrl,
      TASK_QUEUE: sys.taskQueue,
      STRIPE_SECRET_KEY: 'sk_test_emulator',
      STRIPE_API_URL: sys.emulator.url,
      STRIPE_EMULATOR: '1',
      PUBLIC_URL: sys.apiUrl,
      WORKER_METRICS_PORT: '0',
      ...env,
    },
    (line) => typeof line.metrics === 'string' && /polling task queue/.test(line.msg),
  );
  return { child, lines, url: ready.metrics as string };
}
