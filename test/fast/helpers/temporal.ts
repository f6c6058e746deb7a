import { randomUUID } from 'node:crypto';
import type { TestFn } from 'ava';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import { DefaultLogger, makeTelemetryFilterString, Runtime, Worker, type LogEntry } from '@temporalio/worker';
import { notificationTaskQueue, stripeTaskQueue } from '../../../vocabulary';
import { BuyerIdKey, HoldExpiresAtKey, PurchaseStatusKey, SkuKey } from '../../../workflows/definitions';
import { findTemporalCli } from '../../../dev/temporal-cli';
import { workflowSpanSinks } from '../../../worker/tracing';
import { bundleFastWorkflows, FastCoverage } from './bundle';
import { NotificationWorld } from './notification-world';
import { World } from './world';

// One test file's Temporal: the fast tier's dev server (test/runner/fast.ts starts one for every file:
// FAST_TEMPORAL_ADDRESS), else a local one of the file's own (the CLI the project already fetches,
// started by the SDK's TestWorkflowEnvironment.createLocal), the fast tier's workflow bundle (short waits, coverage
// counted), and one worker per task queue running the world's fake activities. Each test opens its
// own case in the world; the workers serve every test of the file at once. The notification queue's
// worker loads the bundle a second time: only the files that ask for it have one (the world's
// notifyBuyer is a fake, so the sagas start no delivery).

/** Workflow log lines at error level: a status moved outside the table, a compensation that gave up. */
const workflowErrors: LogEntry[] = [];
Runtime.install({
  logger: new DefaultLogger('ERROR', (entry) => void workflowErrors.push(entry)),
  // The core's own lines too (an activity that outlived its cancelled workflow is a warning there: expected here).
  telemetryOptions: { logging: { forward: {}, filter: makeTelemetryFilterString({ core: 'ERROR', other: 'ERROR' }) } },
});

export interface FastTemporal {
  env: TestWorkflowEnvironment;
  world: World;
  /** The buyer notifications' deliveries (workflows/notification.ts), on their own queue. */
  notifications: NotificationWorld;
  taskQueue: string;
  /** Error lines the workflows logged since the file started, whose message matches. */
  errorsLogged: (match: RegExp) => string[];
}

/** Registers the file's Temporal: started before its tests, stopped (and coverage written) after them. */
export function useFastTemporal(test: TestFn, opts: { notifications?: boolean } = {}): () => FastTemporal {
  let running: { temporal: FastTemporal; workers: Worker[]; done: Promise<unknown> } | undefined;
  const coverage = new FastCoverage();
  test.before(async () => {
    // The tier's one server (test/runner/fast.ts), else one of the file's own (ava run by hand).
    const shared = process.env.FAST_TEMPORAL_ADDRESS;
    const env = shared
      ? await TestWorkflowEnvironment.createFromExistingServer({ address: shared, namespace: 'default' })
      : await TestWorkflowEnvironment.createLocal({
          server: {
            executable: { type: 'existing-path', path: await findTemporalCli(() => {}) },
            ip: '127.0.0.1',
            ui: false,
            searchAttributes: [PurchaseStatusKey, SkuKey, BuyerIdKey, HoldExpiresAtKey],
          },
        });
    const world = new World();
    const notifications = new NotificationWorld();
    const taskQueue = `fast-${randomUUID()}`;
    const prebuilt = process.env.FAST_WORKFLOW_BUNDLE_PATH;
    const workflowBundle = prebuilt ? { codePath: prebuilt } : { code: await bundleFastWorkflows() };
    const activities = world.activities();
    const options = (queue: string, acts: object = activities) => ({
      connection: env.nativeConnection,
      namespace: env.namespace ?? 'default',
      taskQueue: queue,
      workflowBundle,
      activities: acts,
      // The bundle's tracing interceptors hand their spans to this sink (tracing off: dropped), and
      // its coverage interceptor its counts to this one.
      sinks: { ...workflowSpanSinks(), ...coverage.sinks() },
    });
    const workers = await Promise.all([
      Worker.create(options(taskQueue)),
      // The Stripe queue runs activities only, as in production (worker/create-worker.ts): no bundle to load.
      Worker.create({
        connection: env.nativeConnection,
        namespace: env.namespace ?? 'default',
        taskQueue: stripeTaskQueue(taskQueue),
        activities,
      }),
      ...(opts.notifications
        ? [Worker.create(options(notificationTaskQueue(taskQueue), notifications.activities()))]
        : []),
    ]);
    const done = Promise.all(workers.map((w) => w.run()));
    const errorsLogged = (match: RegExp) => workflowErrors.map((e) => e.message).filter((m) => match.test(m));
    running = { temporal: { env, world, notifications, taskQueue, errorsLogged }, workers, done };
  });
  test.after('no workflow moved a purchase outside PURCHASE_TRANSITIONS', (t) => {
    t.deepEqual(running?.temporal.errorsLogged(/outside PURCHASE_TRANSITIONS/), []);
  });
  test.after.always(async () => {
    if (!running) return;
    for (const w of running.workers) w.shutdown();
    await running.done;
    await running.temporal.env.teardown();
    coverage.write();
  });
  return () => {
    if (!running) throw new Error('the fast Temporal is not running (use it inside a test)');
    return running.temporal;
  };
}
