import { NativeConnection } from '@temporalio/worker';
import { createPool, createStripe } from '../config/clients';
import { ConfigError, loadWorkerConfig } from '../config';
import { HoldDesk } from '../store/hold-desk';
import { sweepExpired } from '../store/holds';
import { migrate } from '../store/migrate';
import { createPurchaseWorker, workerPoolSize } from './create-worker';

// The worker process: purchase sagas, support refunds, and the sweeper that returns lapsed holds.
async function main(): Promise<void> {
  const config = loadWorkerConfig(process.env);
  const log = (line: string) => console.log(`worker: ${line}`);
  // Several processes may boot at once: migrate() serialises them on an advisory lock.
  await migrate(config.databaseUrl, log);
  const limits = { activities: config.maxActivities, localActivities: config.maxLocalActivities };
  // A connection for every activity that may run at once: none of them waits for the pool.
  const db = createPool(config.databaseUrl, workerPoolSize(limits), log, config.pool);
  const connection = await NativeConnection.connect({ address: config.temporalAddress });
  const worker = await createPurchaseWorker({
    connection,
    namespace: config.temporalNamespace,
    taskQueue: config.taskQueue,
    deps: {
      db,
      stripe: createStripe(config),
      desk: new HoldDesk(db),
      successUrl: config.checkoutSuccessUrl,
      cancelUrl: config.checkoutCancelUrl,
    },
    maxConcurrentActivities: limits.activities,
    maxConcurrentLocalActivities: limits.localActivities,
  });
  const sweeper = setInterval(() => {
    sweepExpired(db).then(
      (n) => n > 0 && log(`sweeper returned ${n} lapsed hold(s) to stock`),
      (err: Error) => log(`sweeper: ${err.message}`),
    );
  }, config.sweepIntervalMs);
  log(
    `polling task queue "${config.taskQueue}" on ${config.temporalAddress} (${limits.activities} activities and ${limits.localActivities} local activities at once, ${workerPoolSize(limits)} Postgres connections)`,
  );
  try {
    // Resolves after SIGINT/SIGTERM (installed by the Temporal runtime) and the grace time.
    await worker.run();
  } finally {
    clearInterval(sweeper);
    await connection.close();
    await db.end();
  }
}

main().catch((err) => {
  console.error(err instanceof ConfigError ? err.message : err);
  process.exit(1);
});
