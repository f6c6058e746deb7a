// The command line of the worker's healthcheck (ops/worker-health.ts runs it): its usage and its
// parsing, apart from the CLI's Temporal client so the fast tier tests them.
import os from 'node:os';
import { parseCommandLine, UsageError } from './cli-args';
import { parseDuration } from './temporal-describe';

export const USAGE = `usage: node dist/ops/worker-health.js [--within 60s] [--host HOSTNAME]

Exit 0 when a worker of this host (or --host) polled TASK_QUEUE within --within, 1 when none did,
2 on bad arguments or when Temporal cannot be reached.

Environment: TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE, TASK_QUEUE (default purchases).`;

export interface WorkerHealthArgs {
  withinMs: number;
  host: string;
}

export function parse(argv: string[]): WorkerHealthArgs | 'help' {
  const { values, positionals } = parseCommandLine(argv, {
    within: { type: 'string', default: '60s' },
    host: { type: 'string', default: os.hostname() },
    help: { type: 'boolean', short: 'h', default: false },
  });
  if (values.help) return 'help';
  if (positionals.length) throw new UsageError(`unexpected arguments: ${positionals.join(' ')}`);
  const withinMs = parseDuration(values.within);
  if (!withinMs) throw new UsageError(`--within: not a duration: ${values.within}`);
  return { withinMs, host: values.host };
}
