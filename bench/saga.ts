import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { DefaultLogger, NativeConnection, Runtime, Worker } from '@temporalio/worker';
import pg from 'pg';
import { Admissions } from '../store/admission';
import { DbClock } from '../store/clock';
import { CheckoutWatch } from '../store/checkout-watch';
import { Gate } from '../store/gate';
import { NotifyListener } from '../store/notify-listener';
import { RoomCache } from '../store/room-cache';
import { WaitingRoom } from '../api/waiting-room';
import { createRoomTokens } from '../config/room-tokens';
import { HoldDesk } from '../store/hold-desk';
import { createApp } from '../api/app';
import { BotCheck } from '../api/bot-check';
import { CatalogueCache } from '../api/catalogue-view';
import { Lifecycle } from '../api/shutdown';
import { createMetrics } from '../api/metrics';
import { startEmulator } from '@flash-sale/stripe-emulator';
import { startStack } from '../dev/stack';
import { createBuyerVerifier, signBuyerToken } from '../config/buyer-tokens';
import { createStripe } from '../config/clients';
import { createLogger } from '../config/log';
import { createPurchaseWorker } from '../worker/create-worker';

/**
 * `npm run bench:saga`: purchases per second from POST /v1/purchases to a Checkout URL (hold taken,
 * Stripe session open, over HTTP through the API and a Temporal workflow), with p50/p99 latency,
 * beside a trivial one-activity workflow on the same Temporal server in the same run. Prints the
 * ratio between them: what the saga costs over Temporal's own floor.
 *
 * Env: BENCH_SECONDS (default 10 per phase), BENCH_CONCURRENCY (default 16). Starts its own
 * Postgres and Temporal dev server unless DATABASE_URL / TEMPORAL_ADDRESS are set.
 */

const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 16);
const ADMIN = 'bench-admin';
/** At the emulator's full speed (no rate limit there), the budget must not be what limits either. */
const STRIPE_BUDGET = 10_000;
const BUYER_SECRET = 'bench-buyer-token-secret-0123456789abcdef';

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

async function drive(name: string, once: (n: number) => Promise<void>) {
  const latencies: number[] = [];
  let seq = 0;
  let errors = 0;
  const deadline = Date.now() + SECONDS * 1000;
  const started = process.hrtime.bigint();
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (Date.now() < deadline) {
        const t0 = process.hrtime.bigint();
        try {
          await once(seq++);
          latencies.push(Number(process.hrtime.bigint() - t0) / 1e6);
        } catch (err) {
          if (errors++ < 3) console.error(`${name}:`, (err as Error).message);
        }
      }
    }),
  );
  const elapsed = Number(process.hrtime.bigint() - started) / 1e9;
  latencies.sort((a, b) => a - b);
  return {
    name,
    perSecond: latencies.length / elapsed,
    p50: percentile(latencies, 50),
    p99: percentile(latencies, 99),
    count: latencies.length,
    errors,
  };
}

async function main(): Promise<void> {
  Runtime.install({ logger: new DefaultLogger('ERROR') });
  const dir = mkdtempSync(path.join(os.tmpdir(), 'bench-saga-'));
  const stack = await startStack({ dataDir: dir, persistent: false, log: () => {} });
  const db = new pg.Pool({ connectionString: stack.databaseUrl, max: 40 });
  let closing = false;
  db.on('error', (err) => closing || console.error('postgres connection error:', err.message));
  const emulator = await startEmulator({
    port: 0,
    webhookSecret: 'whsec_bench',
    rateLimit: { accountPerSecond: 0, endpointPerSecond: 0 },
  });
  const stripe = createStripe({ stripeSecretKey: 'sk_test_bench', stripeApiUrl: emulator.url });
  const connection = await Connection.connect({ address: stack.temporalAddress });
  const temporal = new Client({ connection, namespace: stack.temporalNamespace });
  const taskQueue = `bench-${randomUUID()}`;
  const clock = new DbClock(db);
  await clock.start();
  const listener = new NotifyListener(stack.databaseUrl);
  const gate = new Gate(db, stack.databaseUrl, { clock, listener });
  const checkouts = new CheckoutWatch(db, listener);
  await listener.start();
  await gate.start();
  const app = createApp({
    db,
    temporal,
    taskQueue,
    botCheck: new BotCheck(db, clock, { secret: `bench-bot-check-${randomUUID()}`, maxNumber: 1000 }),
    stripe,
    webhookSecret: 'whsec_bench',
    livemode: false,
    buyers: createBuyerVerifier({ secret: BUYER_SECRET }),
    adminToken: ADMIN,
    supportToken: 'bench-support',
    metrics: createMetrics(db, gate),
    lifecycle: new Lifecycle(),
    logger: createLogger('bench-api', { LOG_LEVEL: process.env.LOG_LEVEL || 'warn' }),
    admissions: new Admissions(db, gate, clock),
    clock,
    room: new WaitingRoom(db, createRoomTokens(BUYER_SECRET, clock), new RoomCache(db, { clock }), clock),
    purchaseTimeoutMs: 20_000,
    // Full speed: the checkout pace must not be what limits either.
    checkoutsPerSecond: STRIPE_BUDGET,
    checkouts,
    catalogue: new CatalogueCache(1000),
  });
  const server: Server = await new Promise((r) => {
    const s = app.listen(0, '127.0.0.1', () => r(s));
  });
  const api = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  emulator.setWebhookUrl(`${api}/v1/webhooks/stripe`);
  const nativeConnection = await NativeConnection.connect({ address: stack.temporalAddress });
  const sagaWorker = await createPurchaseWorker({
    stripeRequestsPerSecond: STRIPE_BUDGET,
    connection: nativeConnection,
    namespace: stack.temporalNamespace,
    taskQueue,
    deps: { db, stripe, desk: new HoldDesk(db), clock, successUrl: `${api}/done`, cancelUrl: `${api}/done` },
  });
  const trivialQueue = `${taskQueue}-trivial`;
  const trivialWorker = await Worker.create({
    connection: nativeConnection,
    namespace: stack.temporalNamespace,
    taskQueue: trivialQueue,
    workflowsPath: require.resolve('./trivial-workflow'),
    activities: {
      async noop(): Promise<string> {
        return 'ok';
      },
    },
  });
  const running = Promise.all([sagaWorker.run(), trivialWorker.run()]);
  try {
    const sku = `bench-${Date.now()}`;
    const res = await fetch(`${api}/v1/products`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${ADMIN}` },
      body: JSON.stringify({
        sku,
        name: 'bench',
        priceCents: 100,
        currency: 'usd',
        stock: 1_000_000,
        holdSeconds: 3600,
      }),
    });
    if (res.status !== 201) throw new Error(`product: ${res.status}`);

    // Warm both paths (bundles, connections, JIT) before measuring.
    for (let i = 0; i < 20; i++) {
      await temporal.workflow.execute('oneActivityWorkflow', {
        taskQueue: trivialQueue,
        workflowId: `warm-${randomUUID()}`,
      });
    }
    const saga = await drive('saga: POST /v1/purchases -> checkoutUrl', async (n) => {
      const r = await fetch(`${api}/v1/purchases`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'idempotency-key': `${sku}-${n}`,
          authorization: `Bearer ${await signBuyerToken(BUYER_SECRET, `buyer-${n}`)}`,
        },
        body: JSON.stringify({ sku }),
      });
      const body = (await r.json()) as { checkoutUrl?: string };
      if (r.status !== 201 || !body.checkoutUrl) throw new Error(`${r.status} ${JSON.stringify(body)}`);
    });
    const trivial = await drive('baseline: one-activity workflow, start -> result', async () => {
      await temporal.workflow.execute('oneActivityWorkflow', {
        taskQueue: trivialQueue,
        workflowId: `trivial-${randomUUID()}`,
      });
    });
    console.log(
      `purchase saga benchmark: ${CONCURRENCY} concurrent clients, ${SECONDS}s per phase, ${os.cpus().length} cores`,
    );
    console.log('');
    for (const r of [saga, trivial]) {
      console.log(
        `${r.name.padEnd(52)} ${r.perSecond.toFixed(1).padStart(8)}/s   p50 ${r.p50.toFixed(0).padStart(5)} ms   p99 ${r.p99
          .toFixed(0)
          .padStart(5)} ms   (${r.count} done, ${r.errors} errors)`,
      );
    }
    console.log('');
    console.log(
      `saga / baseline: throughput ${(saga.perSecond / trivial.perSecond).toFixed(2)}x, p50 latency ${(saga.p50 / trivial.p50).toFixed(2)}x`,
    );
  } finally {
    closing = true;
    sagaWorker.shutdown();
    trivialWorker.shutdown();
    await running;
    await nativeConnection.close();
    server.close();
    server.closeAllConnections();
    await emulator.close();
    await connection.close();
    await gate.close();
    await listener.close();
    clock.close();
    await db.end();
    await stack.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
