import fs from 'node:fs';
import path from 'node:path';
import {
  bundleWorkflowCode,
  Worker,
  type BundleOptions,
  type NativeConnection,
  type WorkerOptions,
} from '@temporalio/worker';
import { createActivities, type ActivityDeps } from '../activities';
import { activityInterceptors } from './interceptors';

/**
 * The workflow interceptor modules (the request id on the saga's log lines and activity headers):
 * bundled with the workflows, here or by whoever prebuilds a bundle (`bundleWorkflowCode`).
 */
export const WORKFLOW_INTERCEPTOR_MODULES = [require.resolve('../workflows/interceptors')];

/** Activities one worker runs at once, unless told otherwise (WORKER_MAX_ACTIVITIES). */
export const MAX_CONCURRENT_ACTIVITIES = 50;
/** Local activities (the hold, through the hold desk) one worker runs at once (WORKER_MAX_LOCAL_ACTIVITIES). */
export const MAX_CONCURRENT_LOCAL_ACTIVITIES = 30;

/**
 * The Postgres connections a worker needs so that no activity ever waits for one: each activity and
 * each local activity holds at most one at a time (a hold desk batch holds one for many holds), and
 * the sweeper one more. A pool smaller than this makes activities queue for a connection under load,
 * and an attempt that Temporal times out would still be running, or waiting, when its retry starts.
 */
export function workerPoolSize(limits: { activities: number; localActivities: number }): number {
  return limits.activities + limits.localActivities + 1;
}

export interface PurchaseWorkerOptions {
  connection: NativeConnection;
  namespace: string;
  taskQueue: string;
  deps: ActivityDeps;
  /** A prebuilt bundle (tests build one per file); else the image's (WORKFLOW_BUNDLE_FILE), else bundled at start. */
  workflowBundle?: WorkerOptions['workflowBundle'];
  /** Defaults: MAX_CONCURRENT_ACTIVITIES, MAX_CONCURRENT_LOCAL_ACTIVITIES; size `deps.db` with workerPoolSize. */
  maxConcurrentActivities?: number;
  maxConcurrentLocalActivities?: number;
  /** Workflow tasks one worker runs at once (the SDK's default unless given). */
  maxConcurrentWorkflowTasks?: number;
}

/**
 * Where the image's build puts the prebundled workflows (worker/bundle-workflows.ts): beside the
 * compiled worker, `dist/workflow-bundle.js`. Running from source (tsx) there is none.
 */
export const WORKFLOW_BUNDLE_FILE = path.join(__dirname, '..', 'workflow-bundle.js');

/**
 * The workflows and their interceptors bundled for the worker's sandbox (webpack: seconds of CPU).
 * The image's build writes it once (worker/bundle-workflows.ts), and so does `npm test` for its files.
 */
export async function bundleWorkflows(logger?: BundleOptions['logger']): Promise<string> {
  const { code } = await bundleWorkflowCode({
    workflowsPath: require.resolve('../workflows'),
    workflowInterceptorModules: WORKFLOW_INTERCEPTOR_MODULES,
    ...(logger ? { logger } : {}),
  });
  return code;
}

/** The prebuilt bundle when the build left one, else the workflows are bundled at start. */
function prebuilt(): WorkerOptions['workflowBundle'] {
  return fs.existsSync(WORKFLOW_BUNDLE_FILE) ? { codePath: WORKFLOW_BUNDLE_FILE } : undefined;
}

/** A worker for the purchase and support-refund workflows and their activities. */
export async function createPurchaseWorker(opts: PurchaseWorkerOptions): Promise<Worker> {
  const bundle = opts.workflowBundle ?? prebuilt();
  return Worker.create({
    connection: opts.connection,
    namespace: opts.namespace,
    taskQueue: opts.taskQueue,
    activities: createActivities(opts.deps),
    ...(bundle ? { workflowBundle: bundle } : { workflowsPath: require.resolve('../workflows') }),
    interceptors: { activity: [activityInterceptors], workflowModules: WORKFLOW_INTERCEPTOR_MODULES },
    // In-flight activities get this long to finish when the worker is told to stop.
    shutdownGraceTime: '10 seconds',
    maxConcurrentActivityTaskExecutions: opts.maxConcurrentActivities ?? MAX_CONCURRENT_ACTIVITIES,
    maxConcurrentLocalActivityExecutions: opts.maxConcurrentLocalActivities ?? MAX_CONCURRENT_LOCAL_ACTIVITIES,
    ...(opts.maxConcurrentWorkflowTasks
      ? { maxConcurrentWorkflowTaskExecutions: opts.maxConcurrentWorkflowTasks }
      : {}),
  });
}
