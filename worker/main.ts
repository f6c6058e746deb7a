import pg from 'pg';
import { HoldDesk } from '../activities/hold-desk';
import { migrate } from '../db/migrate';
import { sweepExpired } from '../activities/inventory';
import { connectTemporalWorker, createStripe } from './clients';
import { ConfigError, loadConfig } from './config';
import { createPurchaseWorker } from './create-worker';

// The worker process: purchase sagas, support refunds, and the sweeper that returns lapsed holds.
async function main(): Promise<void> {
  const config = loadConfig(process.env, 'worker');
  // Several processes may boot at once: migrate() serialises them on an advisory lock.
  await migrate(config.databaseUrl, (line) => console.log(`worker: ${line}`));
  const db = new pg.Pool({ connectionString: config.databaseUrl, max: 20 });
  // A pooled idle connection the server dropped is replaced on next use; log it, do not crash.
  db.on('error', (err) => console.error('worker: postgres connection error:', err.message));
  const connection = await connectTemporalWorker(config.temporalAddress);
  const worker = await createPurchaseWorker({
    connection,
    namespace: config.temporalNamespace,
    taskQueue: config.taskQueue,
    deps: {
      db,
      stripe: createStripe(config.stripeSecretKey, config.stripeApiUrl),
      desk: new HoldDesk(db),
      successUrl: `${config.publicUrl}/v1/purchases/{purchaseId}`,
      cancelUrl: `${config.publicUrl}/v1/purchases/{purchaseId}`,
    },
  });
  const sweeper = setInterval(() => {
    sweepExpired(db).then(
      (n) => n > 0 && console.log(`sweeper: returned ${n} lapsed hold(s) to stock`),
      (err: Error) => console.error('sweeper:', err.message),
    );
  }, config.sweepIntervalMs);
  console.log(`worker: polling task queue "${config.taskQueue}" on ${config.temporalAddress}`);
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
