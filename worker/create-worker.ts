import fs from 'node:fs';
import path from 'node:path';
import {
  bundleWorkflowCode,
  Worker,
  type BundleOptions,
  type NativeConnection,
  type WorkerOptions,
} from '@temporalio/worker';
import { createStoreActivities, createStripeActivities, type ActivityDeps } from '../activities';
import type { NotificationActivities } from '../activities/notifications';
import { notificationTaskQueue, stripeTaskQueue } from '../vocabulary';
import type { WorkerDeploymentVersion } from '../config/temporal';
import { activeTracing } from '../config/tracing';
import { STRIPE_CALL_TIMEOUT_MS } from '../vocabulary/limits';
import { activityInterceptors } from './interceptors';
import { tracingActivityInterceptors, workflowSpanSinks } from './tracing';

/** OpenTelemetry's workflow interceptors: a span for each saga's run and each activity it schedules. */
const WORKFLOW_SPANS_MODULE = '@temporalio/interceptors-opentelemetry/lib/workflow-interceptors';

/**
 * The workflow interceptor modules, bundled with the workflows: the request id on the saga's log
 * lines and activity headers, and, when `tracing`, OpenTelemetry's workflow spans. Without tracing
 * those are left out: they made spans in the sandbox at every activation for the sink to drop, and
 * took a saga in `bench:saga` from 41 to 34 a second. Neither makes a command, so a history recorded
 * with them replays without them, and the other way (test/worker/workflow-spans.test.ts).
 */
export function workflowInterceptorModules(tracing: boolean): string[] {
  return [require.resolve('../workflows/interceptors'), ...(tracing ? [require.resolve(WORKFLOW_SPANS_MODULE)] : [])];
}

/** Whether a bundle carries the workflow spans (webpack names every module it bundles by its path). */
export function bundleTraces(code: string): boolean {
  return code.includes(WORKFLOW_SPANS_MODULE);
}

/** Activities one worker runs at once, unless told otherwise (WORKER_MAX_ACTIVITIES). */
export const MAX_CONCURRENT_ACTIVITIES = 50;
/** Local activities (the hold, through the hold desk) one worker runs at once (WORKER_MAX_LOCAL_ACTIVITIES). */
export const MAX_CONCURRENT_LOCAL_ACTIVITIES = 30;
/**
 * Stripe calls one worker has in flight at once (WORKER_MAX_STRIPE_CALLS): the budget's pace times
 * Stripe's answer time (80/s × 250 ms = 20), so one worker alone can use a live account's budget.
 */
export const MAX_CONCURRENT_STRIPE_CALLS = 20;

/**
 * The Postgres connections a worker needs so that no activity ever waits for one: each activity and
 * each local activity holds at most one at a time (a hold desk batch holds one for many holds), and
 * the sweeper one more. A pool smaller than this makes activities queue for a connection under load,
 * and an attempt that Temporal times out would still be running, or waiting, when its retry starts.
 */
export function workerPoolSize(limits: { activities: number; localActivities: number; stripeCalls?: number }): number {
  return limits.activities + limits.localActivities + (limits.stripeCalls ?? MAX_CONCURRENT_STRIPE_CALLS) + 1;
}

/**
 * In-flight activities get this long to finish when the worker is told to stop (SIGTERM): longer than
 * the longest attempt of any of them, a Stripe call's (STRIPE_CALL_TIMEOUT_MS), so a rollout does not
 * cut a call whose answer Stripe is about to give (its retry, on another worker, would wait for the
 * attempt's timeout first). A notification delivery (NOTIFY_TIMEOUT_MS, 10 s by default) set longer
 * may be cut: it is delivered again.
 */
export const WORKER_SHUTDOWN_GRACE_MS = STRIPE_CALL_TIMEOUT_MS + 5_000;

/** Buyer notification deliveries one worker runs at once, on their own queue: a webhook's wait is not a saga's. */
export const MAX_CONCURRENT_NOTIFICATIONS = 4;

/** Every Postgres connection a worker process holds: workerPoolSize and one for each notification delivery. */
export function workerPostgresConnections(limits: Parameters<typeof workerPoolSize>[0]): number {
  return workerPoolSize(limits) + MAX_CONCURRENT_NOTIFICATIONS;
}

export interface PurchaseWorkerOptions {
  connection: NativeConnection;
  namespace: string;
  taskQueue: string;
  deps: ActivityDeps;
  /**
   * The buyer notifications' delivery activities (activities/notifications.ts), on their own task
   * queue; without them this process delivers none (a benchmark's, a test's).
   */
  notificationActivities?: NotificationActivities;
  /**
   * The deployment's Stripe budget, requests a second (STRIPE_MAX_REQUESTS_PER_SECOND): the rate limit
   * of the Stripe task queue, which the Temporal server enforces across every worker polling it.
   * Every worker of a deployment must say the same (the last poller's value wins).
   */
  stripeRequestsPerSecond: number;
  /** A prebuilt bundle (WORKFLOW_BUNDLE_PATH; npm test builds one); else the image's (WORKFLOW_BUNDLE_FILE), else bundled at start. */
  workflowBundle?: WorkerOptions['workflowBundle'];
  /** Defaults: MAX_CONCURRENT_ACTIVITIES, MAX_CONCURRENT_LOCAL_ACTIVITIES, MAX_CONCURRENT_STRIPE_CALLS; size `deps.db` with workerPoolSize. */
  maxConcurrentActivities?: number;
  maxConcurrentLocalActivities?: number;
  maxConcurrentStripeCalls?: number;
  /** Workflow tasks one worker runs at once (the SDK's default unless given). */
  maxConcurrentWorkflowTasks?: number;
  /** Worker Versioning: the Worker Deployment version all three workers poll as (off when unset). */
  deployment?: WorkerDeploymentVersion;
}

/**
 * Worker Versioning's options for one version. The purchase saga is pinned (workflows/purchase.ts:
 * it runs to its end on the version it started on); every other workflow follows the current
 * version (AUTO_UPGRADE), so its changes still go behind `patched()`.
 */
export function deploymentOptions(version: WorkerDeploymentVersion): WorkerOptions['workerDeploymentOptions'] {
  return { version, useWorkerVersioning: true, defaultVersioningBehavior: 'AUTO_UPGRADE' };
}

/**
 * Where the image's build puts the prebundled workflows (worker/bundle-workflows.ts), beside the
 * compiled worker: `dist/workflow-bundle.js`, and with the workflow spans for a worker that traces,
 * `dist/workflow-bundle.traced.js`. Running from source (tsx) there are none.
 */
export function workflowBundleFile(tracing: boolean): string {
  return path.join(__dirname, '..', tracing ? 'workflow-bundle.traced.js' : 'workflow-bundle.js');
}

/** A bundle logger that keeps webpack's report to itself and says only warnings and errors. */
export const QUIET_BUNDLE_LOGGER: NonNullable<BundleOptions['logger']> = {
  log() {},
  trace() {},
  debug() {},
  info() {},
  warn: (message) => console.warn(message),
  error: (message) => console.error(message),
};

/**
 * The workflows and their interceptors bundled for the worker's sandbox (webpack: seconds of CPU),
 * with the workflow spans when the workers that run it trace. The image's build writes both
 * (worker/bundle-workflows.ts), and `npm test` one for its files.
 */
export async function bundleWorkflows(opts: { tracing: boolean; logger?: BundleOptions['logger'] }): Promise<string> {
  const { code } = await bundleWorkflowCode({
    workflowsPath: require.resolve('../workflows'),
    workflowInterceptorModules: workflowInterceptorModules(opts.tracing),
    ...(opts.logger ? { logger: opts.logger } : {}),
  });
  return code;
}

/** The prebuilt bundle when the build left one, else the workflows are bundled at start. */
function prebuilt(tracing: boolean): WorkerOptions['workflowBundle'] {
  const file = workflowBundleFile(tracing);
  return fs.existsSync(file) ? { codePath: file } : undefined;
}

/**
 * A worker that traces refuses a bundle without the workflow spans (one written for workers that
 * do not): its sagas' spans would be missing from every trace without a word.
 */
function checkBundle(bundle: NonNullable<WorkerOptions['workflowBundle']>, tracing: boolean): void {
  if (!tracing) return;
  const code = 'code' in bundle ? bundle.code : fs.readFileSync(bundle.codePath, 'utf8');
  if (!bundleTraces(code)) {
    const where = 'codePath' in bundle ? ` (${bundle.codePath})` : '';
    throw new Error(
      `tracing is on but the workflow bundle${where} was built without the workflow spans: ` +
        'build it with bundleWorkflows({ tracing: true }) (the image has dist/workflow-bundle.traced.js), or unset WORKFLOW_BUNDLE_PATH',
    );
  }
}

/**
 * One worker process's two Temporal workers: the sagas' (the workflows, their store activities and
 * local activities, on the saga's task queue) and Stripe's (every activity that calls Stripe, on the
 * Stripe task queue at the budget's pace). They run, stop and fail together.
 */
export class PurchaseWorker {
  readonly workers: Worker[];
  constructor(
    readonly sagas: Worker,
    readonly stripe: Worker,
    readonly notifications?: Worker,
  ) {
    this.workers = notifications ? [sagas, stripe, notifications] : [sagas, stripe];
  }

  /** Until every one has stopped (SIGINT/SIGTERM, or shutdown()); the first failure is thrown once all have. */
  async run(): Promise<void> {
    const results = await Promise.allSettled(this.workers.map((w) => w.run()));
    const failed = results.find((r) => r.status === 'rejected');
    if (failed) throw failed.reason;
  }

  shutdown(): void {
    for (const w of this.workers) if (w.getState() === 'RUNNING') w.shutdown();
  }

  /** RUNNING while all run; otherwise the state of one that is not. */
  getState(): ReturnType<Worker['getState']> {
    return this.workers.map((w) => w.getState()).find((s) => s !== 'RUNNING') ?? 'RUNNING';
  }
}

/** The workers of the purchase, stray-payment, support-refund and notification workflows and their activities. */
export async function createPurchaseWorker(opts: PurchaseWorkerOptions): Promise<PurchaseWorker> {
  const tracing = activeTracing() !== undefined;
  const bundle = opts.workflowBundle ?? prebuilt(tracing);
  if (bundle) checkBundle(bundle, tracing);
  const common = {
    connection: opts.connection,
    namespace: opts.namespace,
    // Tracing's activity interceptor first: its span is current when ours logs the attempt.
    // A prebuilt bundle has the workflow interceptors in it: named again, the SDK warns it ignores them.
    interceptors: {
      activity: [...tracingActivityInterceptors(), activityInterceptors],
      ...(bundle ? {} : { workflowModules: workflowInterceptorModules(tracing) }),
    },
    sinks: workflowSpanSinks(),
    shutdownGraceTime: WORKER_SHUTDOWN_GRACE_MS,
    ...(opts.deployment ? { workerDeploymentOptions: deploymentOptions(opts.deployment) } : {}),
  };
  const sagas = await Worker.create({
    ...common,
    taskQueue: opts.taskQueue,
    activities: createStoreActivities(opts.deps),
    ...(bundle ? { workflowBundle: bundle } : { workflowsPath: require.resolve('../workflows') }),
    maxConcurrentActivityTaskExecutions: opts.maxConcurrentActivities ?? MAX_CONCURRENT_ACTIVITIES,
    maxConcurrentLocalActivityExecutions: opts.maxConcurrentLocalActivities ?? MAX_CONCURRENT_LOCAL_ACTIVITIES,
    ...(opts.maxConcurrentWorkflowTasks
      ? { maxConcurrentWorkflowTaskExecutions: opts.maxConcurrentWorkflowTasks }
      : {}),
  });
  const stripe = await Worker.create({
    ...common,
    taskQueue: stripeTaskQueue(opts.taskQueue),
    activities: createStripeActivities(opts.deps),
    maxConcurrentActivityTaskExecutions: opts.maxConcurrentStripeCalls ?? MAX_CONCURRENT_STRIPE_CALLS,
    // The budget, enforced by the Temporal server for the whole queue (all workers together).
    maxTaskQueueActivitiesPerSecond: opts.stripeRequestsPerSecond,
  });
  const notifications =
    opts.notificationActivities &&
    (await Worker.create({
      ...common,
      taskQueue: notificationTaskQueue(opts.taskQueue),
      activities: opts.notificationActivities,
      ...(bundle ? { workflowBundle: bundle } : { workflowsPath: require.resolve('../workflows') }),
      maxConcurrentActivityTaskExecutions: MAX_CONCURRENT_NOTIFICATIONS,
    }));
  return new PurchaseWorker(sagas, stripe, notifications);
}
