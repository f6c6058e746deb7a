import { Client } from '@temporalio/client';
import pg from 'pg';
import { migrate } from '../db/migrate';
import { connectTemporalClient, createStripe } from '../worker/clients';
import { ConfigError, loadConfig } from '../worker/config';
import { createApp } from './app';
import type { ApiDeps } from './deps';
import { createMetrics } from './metrics';

/** How long in-flight requests get to finish after that. */
const DRAIN_MS = 5000;

// The API process. On SIGINT/SIGTERM: /readyz turns 503, in-flight requests finish, then the
// Temporal connection and the pool close.
async function main(): Promise<void> {
  const config = loadConfig(process.env, 'api');
  // Several processes may boot at once: migrate() serialises them on an advisory lock.
  await migrate(config.databaseUrl, (line) => console.log(`api: ${line}`));
  const db = new pg.Pool({ connectionString: config.databaseUrl, max: 30 });
  // A pooled idle connection the server dropped is replaced on next use; log it, do not crash.
  db.on('error', (err) => console.error('api: postgres connection error:', err.message));
  const connection = await connectTemporalClient(config.temporalAddress);
  const deps: ApiDeps = {
    db,
    temporal: new Client({ connection, namespace: config.temporalNamespace }),
    taskQueue: config.taskQueue,
    stripe: createStripe(config.stripeSecretKey, config.stripeApiUrl),
    webhookSecret: config.stripeWebhookSecret,
    adminToken: config.adminToken,
    supportToken: config.supportToken,
    metrics: createMetrics(db),
    lifecycle: { draining: false },
    log: (msg, err) => console.error(msg, err ?? ''),
  };
  const server = createApp(deps).listen(config.port, config.host, () => {
    console.log(`api: listening on http://${config.host}:${config.port}`);
  });
  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    console.log(`api: ${signal}, draining`);
    deps.lifecycle.draining = true;
    // /readyz answers 503 for a while before the listener closes, so load balancers stop sending first.
    await new Promise((r) => setTimeout(r, config.shutdownGraceMs));
    const closed = new Promise((r) => server.close(r));
    server.closeIdleConnections();
    await Promise.race([closed, new Promise((r) => setTimeout(r, DRAIN_MS))]);
    server.closeAllConnections();
    await connection.close();
    await db.end();
    process.exit(0);
  };
  process.on('SIGINT', () => void stop('SIGINT'));
  process.on('SIGTERM', () => void stop('SIGTERM'));
}

main().catch((err) => {
  console.error(err instanceof ConfigError ? err.message : err);
  process.exit(1);
});
