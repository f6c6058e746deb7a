// First: tracing (when the OTEL_* variables ask for it) must be on before http and pg load.
import './start-tracing';
import { NativeConnection } from '@temporalio/worker';
import { Client } from '@temporalio/client';
import { createPool, createStripe, nativeConnectionOptions, reaching, requireNamespace } from '../config/clients';
import { loadWorkerConfig } from '../config';
import { variable } from '../config/variables';
import { loadNotifyConfig } from '../config/notify';
import { createLogger, exitOnFailure, type Logger } from '../config/log';
import { activeTracing, temporalClientInterceptors } from '../config/tracing';
import { describeTemporal } from '../config/temporal';
import { DbClock } from '../store/clock';
import { HoldDesk } from '../store/hold-desk';
import { sweepExpired } from '../store/holds';
import { prepareSchema } from '../store/migrate';
import { createPurchaseWorker, workerPostgresConnections } from './create-worker';
import { createWorkerMetrics, installRuntime, serveTelemetry } from './telemetry';
import { stripeTaskQueue } from '../vocabulary';
import { notificationMetrics } from './notification-metrics';
import { configuredChannels, webhookSecretWarning } from './notification-channels';
import { createNotifier, startHandOver } from './notifier';
import { createNotificationActivities } from '../activities/notifications';

let logger: Logger | undefined;

// The worker process: purchase sagas, support refunds, and the sweeper that returns lapsed holds.
async function main(): Promise<void> {
  logger = createLogger('worker');
  const config = loadWorkerConfig(process.env);
  const notify = loadNotifyConfig(process.env);
  const log = logger;
  // Before any connection: the runtime's logger and metrics are fixed when it starts.
  const sdkMetricsUrl = await installRuntime(log);
  // Migrates (several processes may boot at once: an advisory lock serialises them), or with
  // MIGRATE_AT_BOOT=0 only checks that nothing is missing.
  await reaching({ name: 'Postgres', databaseUrl: config.databaseUrl }, () =>
    prepareSchema(config.databaseUrl, config.migrateAtBoot, (line) => log.info(line)),
  );
  const limits = {
    activities: config.maxActivities,
    localActivities: config.maxLocalActivities,
    stripeCalls: config.maxStripeCalls,
  };
  // A connection for every activity that may run at once: none of them waits for the pool.
  // One connection more for each notification delivery that may run at once.
  const db = createPool(config.databaseUrl, workerPostgresConnections(limits), (line) => log.warn(line), config.pool);
  // Postgres's clock: whether a hold has lapsed is decided by the clock that lapses it (store/clock.ts).
  const clock = new DbClock(db, { log: (line) => log.warn(line) });
  await clock.start();
  const connection = await reaching({ name: 'Temporal', address: config.temporal.address }, () =>
    NativeConnection.connect(nativeConnectionOptions(config.temporal)),
  );
  await requireNamespace(connection, config.temporalNamespace, config.temporal.address);
  const client = new Client({
    connection,
    namespace: config.temporalNamespace,
    // A delivery started by the saga's notifyBuyer joins the saga's trace (tracing on).
    interceptors: temporalClientInterceptors(),
  });
  const metrics = createWorkerMetrics();
  const channels = configuredChannels(notify, (line) => log.info(line));
  const secretWarning = webhookSecretWarning(notify);
  if (secretWarning) log.warn(secretWarning);
  const notifier = createNotifier(
    client,
    config.taskQueue,
    channels.map((c) => c.name),
  );
  const countOutcome = notificationMetrics(metrics.registry, db, notifier.channels);
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
      onSessionOpened: (seconds) => {
        metrics.sessionsOpened.inc();
        metrics.checkoutSeconds.observe(seconds);
      },
      notifier,
    },
    notificationActivities: createNotificationActivities({
      db,
      channels,
      policy: notify,
      onOutcome: countOutcome,
      log: (line) => log.info(line),
    }),
    stripeRequestsPerSecond: config.stripeMaxRequestsPerSecond,
    ...(config.workflowBundlePath ? { workflowBundle: { codePath: config.workflowBundlePath } } : {}),
    maxConcurrentActivities: limits.activities,
    maxConcurrentLocalActivities: limits.localActivities,
    maxConcurrentStripeCalls: limits.stripeCalls,
    ...(config.deployment ? { deployment: config.deployment } : {}),
  });
  const telemetry = await serveTelemetry({
    metrics,
    ...config.metrics,
    sdkMetricsUrl,
    state: () => worker.getState(),
    temporalCheck: (ms) => connection.withDeadline(Date.now() + ms, () => connection.workflowService.getSystemInfo({})),
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
  if (notifier.channels.length === 0) {
    log.info(
      'no NOTIFY_WEBHOOK_URL, SMTP_URL or NOTIFY_LOG: buyer notifications wait in the notifications table, undelivered',
    );
  } else log.info(`buyer notifications delivered by ${notifier.channels.join(', ')}`);
  if (config.taskQueue !== variable('TASK_QUEUE').default) {
    // The server's dynamic config keeps the Stripe queue in one partition by its name: another name
    // gets the default four, each enforcing a share of the budget (measured 1.1-1.2x Stripe's floor).
    log.warn(
      `TASK_QUEUE is "${config.taskQueue}": name "${stripeTaskQueue(config.taskQueue)}" in the Temporal server's dynamic config (matching.numTaskqueueReadPartitions and matching.numTaskqueueWritePartitions 1, as deploy/temporal/dynamicconfig.yaml does for purchases-stripe), or its budget is split over the default 4 partitions and checkouts open 1.1-1.2x slower than the budget allows (the dev server of npm start keeps every queue in one)`,
    );
  }
  const handOver = startHandOver(db, notifier, (line) => log.info(line));
  log.info(
    {
      taskQueue: config.taskQueue,
      stripeTaskQueue: stripeTaskQueue(config.taskQueue),
      stripeBudget: config.stripeMaxRequestsPerSecond,
      metrics: telemetry.url,
      ...limits,
      postgresConnections: workerPostgresConnections(limits),
      ...(config.deployment ? { deployment: config.deployment } : {}),
    },
    `polling task queues "${config.taskQueue}" and "${stripeTaskQueue(config.taskQueue)}" (Stripe, at most ${config.stripeMaxRequestsPerSecond} calls/s for the deployment) on ${describeTemporal(config.temporal)}${
      config.deployment
        ? ` as version ${config.deployment.buildId} of Worker Deployment ${config.deployment.deploymentName} (it takes new sagas once set current)`
        : ''
    }; /healthz and /metrics on ${telemetry.url}`,
  );
  try {
    // Resolves after SIGINT/SIGTERM (installed by the Temporal runtime) and the grace time.
    await worker.run();
  } finally {
    clearInterval(sweeper);
    handOver.stop();
    clock.close();
    await telemetry.close();
    await connection.close();
    await db.end();
    // The spans still in the batch (tracing on).
    await activeTracing()?.shutdown();
  }
}

main().catch((err) => exitOnFailure(logger, err));
