// The worker container's healthcheck (docker-compose.yml): exit 0 when Temporal has seen a worker
// of this host (its identity is `<pid>@<hostname>`) poll the task queue within --within (default
// 60s), 1 when not, 2 when Temporal cannot be asked. A worker whose process lives on but whose
// polling stopped (a lost connection, a wedged runtime) turns unhealthy.
import os from 'node:os';
import { openCliClients, parseCommandLine, runCli, UsageError } from './cli';
import { parseDuration } from './temporal-describe';

const USAGE = `usage: node dist/ops/worker-health.js [--within 60s] [--host HOSTNAME]

Exit 0 when a worker of this host (or --host) polled TASK_QUEUE within --within, 1 when none did,
2 on bad arguments or when Temporal cannot be reached.

Environment: TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE, TASK_QUEUE (default purchases).`;

interface Args {
  withinMs: number;
  host: string;
}

function parse(argv: string[]): Args | 'help' {
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

async function main(args: Args): Promise<number> {
  const clients = await openCliClients('worker-health', { db: 'optional', temporal: true });
  try {
    const { pollers } = await clients.temporal!.workflowService.describeTaskQueue({
      namespace: clients.namespace,
      taskQueue: { name: clients.taskQueue },
      // TASK_QUEUE_TYPE_WORKFLOW: the workflow pollers (every worker of ours runs workflows).
      taskQueueType: 1,
    });
    const since = Date.now() - args.withinMs;
    const ours = (pollers ?? []).filter((p) => (p.identity ?? '').endsWith(`@${args.host}`));
    const recent = ours.filter((p) => Number(p.lastAccessTime?.seconds ?? 0) * 1000 >= since);
    if (recent.length === 0) {
      console.error(
        `worker-health: no worker of ${args.host} polled task queue ${clients.taskQueue} in the last ${args.withinMs / 1000}s`,
      );
      return 1;
    }
    console.log(`worker-health: ${recent.map((p) => p.identity).join(', ')} polling ${clients.taskQueue}`);
    return 0;
  } finally {
    await clients.close();
  }
}

runCli('worker-health', USAGE, parse, main, 2);
