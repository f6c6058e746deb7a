// The worker container's healthcheck (docker-compose.yml): exit 0 when Temporal has seen a worker
// of this host (its identity is `<pid>@<hostname>`) poll the task queue within --within (default
// 60s), 1 when not, 2 when Temporal cannot be asked. A worker whose process lives on but whose
// polling stopped (a lost connection, a wedged runtime) turns unhealthy.
import { openCliClients, runCli } from './cli';
import { parse, USAGE, type WorkerHealthArgs } from './worker-health-args';

async function main(args: WorkerHealthArgs): Promise<number> {
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
