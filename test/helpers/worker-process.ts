import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
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

/**
 * `worker/main.ts` as a deployment runs it, in a child process (so a test can kill it), on this
 * system's task queue against its emulator, its metrics on a free port. Resolves once it polls.
 */
export function startWorkerProcess(sys: System, env: Record<string, string> = {}): Promise<WorkerProcess> {
  const child = spawn(process.execPath, ['--import', 'tsx', path.join(__dirname, '../../worker/main.ts')], {
    env: {
      ...process.env,
      DATABASE_URL: sys.databaseUrl,
      TASK_QUEUE: sys.taskQueue,
      STRIPE_SECRET_KEY: 'sk_test_emulator',
      STRIPE_API_URL: sys.emulator.url,
      STRIPE_EMULATOR: '1',
      PUBLIC_URL: sys.apiUrl,
      WORKER_METRICS_PORT: '0',
      ...env,
    },
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
        if (typeof line.metrics === 'string' && /polling task queue/.test(line.msg)) {
          resolve({ child, lines, url: line.metrics });
        }
      }
    });
    child.stderr.on('data', (d: Buffer) => (raw += d.toString()));
    child.on('exit', (code) => reject(new Error(`worker exited ${code} before it was ready:\n${raw}`)));
  });
}
