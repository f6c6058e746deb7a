import { NativeConnection } from '@temporalio/worker';
import { createPool, createStripe, nativeConnectionOptions } from '../config/clients';
import { loadWorkerConfig } from '../config';
import { loadNotifyConfig } from '../config/notify';
import { createLogger, exitOnFailure, type Logger } from '../config/log';
import { describeTemporal } from '../config/temporal';
import { DbClock } from '../store/clock';
import { HoldDesk } from '../store/hold-desk';
import { sweepExpired } from '../store/holds';
import { migrate } from '../store/migrate';
import { createPurchaseWorker, workerPostgresConnections } from './create-worker';
import { createWorkerMetrics, installRuntime, serveTelemetry } from './telemetry';
import { stripeTaskQueue } from '../vocabulary';
import { outboxMetrics } from './outbox-metrics';
import { startOutboxSender } from './outbox-sender';
import { configuredChannelNames } from './outbox-channels';

let logger: Logger | undefined;

// The worker process: purchase sagas, support refunds, and the sweeper that returns lapsed holds.
async function main(): Promise<void> {
  logger = createLogger('worker');
  const config = loadWorkerConfig(process.env);
  const notify = loadNotifyConfig(process.env);
  const log = logger;
  // Before any connection: the runtime's logger and metrics are fixed when it starts.
  const sdkMetricsUrl = await installRuntime(log);
  // Several processes may boot at once: migrate() serialises them on an advisory lock.
  await migrate(config.databaseUrl, (line) => log.info(line));
  const limits = {
    activities: config.maxActivities,
    localActivities: config.maxLocalActivities,
    stripeCalls: config.maxStripeCalls,
  };
  // A connection for every activity that may run at once: none of them waits for the pool.
  // One connection more than the activities need: the outbox sender's.
  const db = createPool(config.databaseUrl, workerPostgresConnections(limits), (line) => log.warn(line), config.pool);
  // Postgres's clock: whether a hold has lapsed is decided by the clock that lapses it (store/clock.ts).
  const clock = new DbClock(db, { log: (line) => log.warn(line) });
  await clock.start();
  const connection = await NativeConnection.connect(nativeConnectionOptions(config.temporal));
  const metrics = createWorkerMetrics();
  metrics.stripeBudget.set(config.stripeMaxRequestsPerSecond);
  const worker = await createPurchaseWorker({
    connection,
    namespace: config.temporalNamespace,
    taskQueue: config.taskQueue,
    deps: {
      db,
      stripe: createStripe(config),
      desk: new HoldDesk(db),
      clock,
      successUrl: config.checkoutSuccessUrl,
      cancelUrl: config.checkoutCancelUrl,
      onStripeCall: (endpoint, outcome) => metrics.stripeRequests.inc({ endpoint, outcome }),
      onStrayRefundRefused: () => metrics.strayRefundsRefused.inc(),
    },
    stripeRequestsPerSecond: config.stripeMaxRequestsPerSecond,
    ...(config.workflowBundlePath ? { workflowBundle: { codePath: config.workflowBundlePath } } : {}),
    maxConcurrentActivities: limits.activities,
    maxConcurrentLocalActivities: limits.localActivities,
    maxConcurrentStripeCalls: limits.stripeCalls,
  });
  const telemetry = await serveTelemetry({
    metrics,
    ...config.metrics,
    sdkMetricsUrl,
    state: () => worker.getState(),
    logger: log,
  });
  const sweeper = setInterval(() => {
    sweepExpired(db).then(
      (n) => {
        if (n === 0) return;
        telemetry.sweptHolds.inc(n);
        log.info({ holds: n }, `sweeper returned ${n} lapsed hold(s) to stock`);
      },
      (err: Error) => log.warn({ err }, 'sweeper failed'),
    );
  }, config.sweepIntervalMs);
  const countOutcome = outboxMetrics(telemetry.registry, db, configuredChannelNames(notify));
  const outbox = startOutboxSender(db, notify, (line) => log.info(line), countOutcome);
  log.info(
    {
      taskQueue: config.taskQueue,
      stripeTaskQueue: stripeTaskQueue(config.taskQueue),
      stripeBudget: config.stripeMaxRequestsPerSecond,
      metrics: telemetry.url,
      ...limits,
      postgresConnections: workerPostgresConnections(limits),
    },
    `polling task queues "${config.taskQueue}" and "${stripeTaskQueue(config.taskQueue)}" (Stripe, at most ${config.stripeMaxRequestsPerSecond} calls/s for the deployment) on ${describeTemporal(config.temporal)}; /healthz and /metrics on ${telemetry.url}`,
  );
  try {
    // Resolves after SIGINT/SIGTERM (installed by the Temporal runtime) and the grace time.
    await worker.run();
  } finally {
    clearInterval(sweeper);
    clock.close();
    await telemetry.close();
    await outbox.stop();
    await connection.close();
    await db.end();
  }
}

main().catch((err) => exitOnFailure(logger, err));
