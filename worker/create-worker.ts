import { Worker, type NativeConnection, type WorkerOptions } from '@temporalio/worker';
import { createActivities, type ActivityDeps } from '../activities';

/** Activities one worker runs at once. */
export const MAX_CONCURRENT_ACTIVITIES = 200;

export interface PurchaseWorkerOptions {
  connection: NativeConnection;
  namespace: string;
  taskQueue: string;
  deps: ActivityDeps;
  /** A prebuilt bundle (tests build one per file); otherwise the workflows are bundled at start. */
  workflowBundle?: WorkerOptions['workflowBundle'];
}

/** A worker for the purchase and support-refund workflows and their activities. */
export async function createPurchaseWorker(opts: PurchaseWorkerOptions): Promise<Worker> {
  return Worker.create({
    connection: opts.connection,
    namespace: opts.namespace,
    taskQueue: opts.taskQueue,
    activities: createActivities(opts.deps),
    ...(opts.workflowBundle
      ? { workflowBundle: opts.workflowBundle }
      : { workflowsPath: require.resolve('../workflows') }),
    // In-flight activities get this long to finish when the worker is told to stop.
    shutdownGraceTime: '10 seconds',
    maxConcurrentActivityTaskExecutions: MAX_CONCURRENT_ACTIVITIES,
  });
}
