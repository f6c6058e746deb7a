import { randomUUID } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import { Client, Connection } from '@temporalio/client';
import { NativeConnection } from '@temporalio/worker';
import pg from 'pg';
import { startEmulator } from '@flash-sale/stripe-emulator';
import { HoldDesk } from '../../store/hold-desk';
import { Admissions } from '../../store/admission';
import { DbClock } from '../../store/clock';
import { CheckoutWatch } from '../../store/checkout-watch';
import { Gate } from '../../store/gate';
import { NotifyListener } from '../../store/notify-listener';
import { createApp } from '../../api/app';
import type { ApiDeps } from '../../api/deps';
import { BotCheck } from '../../api/bot-check';
import { createMetrics } from '../../api/metrics';
import { CatalogueCache } from '../../api/catalogue-view';
import { createRateLimits } from '../../api/rate-limits';
import { createBuyerVerifier } from '../../config/buyer-tokens';
import { createRoomTokens } from '../../config/room-tokens';
import { WaitingRoom } from '../../api/waiting-room';
import { Lifecycle } from '../../api/shutdown';
import { Admitter } from '../../store/admitter';
import { RoomCache } from '../../store/room-cache';
import { createStripe } from '../../config/clients';
import { createLogger } from '../../config/log';
import { createPurchaseWorker, type PurchaseWorker } from '../../worker/create-worker';
import { uniqueSku } from './db';
import type { System, SystemOptions } from './system-options';
import { createOwnDatabase } from './own-database';

import {
  ADMIN_TOKEN,
  AS_SUPPORT,
  asBuyer,
  BOT_CHECK,
  BUYER_TOKEN_SECRET,
  ROOM_TOKEN_SECRET,
  SUPPORT_TOKEN,
  WEBHOOK_SECRET,
} from './credentials';
import { temporalAddress, workflowBundle } from './temporal';
import { notificationParts } from './notification-parts';

export * from './credentials';
export type { SystemOptions, System } from './system-options';
export { sellTo, sessionOf, winnersOf } from './sales';
export { createOwnDatabase } from './own-database';
export { temporalAddress, workflowBundle } from './temporal';

/**
 * The real system for one test file: Postgres and the Temporal dev server that `npm test` started,
 * a payments emulator and the API (Koa, on a free port) of this file's own, and a worker on a
 * task queue of its own. stripe-node talks to the emulator over HTTP; the emulator signs and
 * delivers webhooks to the API.
 */
export async function startSystem(opts: SystemOptions = {}): Promise<System> {
  const databaseUrl = opts.ownDatabase ? await createOwnDatabase() : process.env.DATABASE_URL!;
  const db = new pg.Pool({ connectionString: databaseUrl, max: 30 });
  // Each API instance measures its own offset to Postgres, as each API process does.
  const clocks: DbClock[] = [];
  const clockOf = async (skewMs = 0) => {
    const c = new DbClock(db, { local: () => Date.now() + skewMs });
    await c.start();
    clocks.push(c);
    return c;
  };
  const clock = await clockOf();
  const checkoutsPerSecond = opts.checkoutsPerSecond ?? 1000;
  const checkoutListener = new NotifyListener(databaseUrl);
  const gate = new Gate(db, databaseUrl, { clock, resyncMs: opts.gateResyncMs, listener: checkoutListener });
  await checkoutListener.start();
  await gate.start();
  const taskQueue = `test-${randomUUID()}`;
  const roomOf = (c: DbClock) =>
    new WaitingRoom(
      db,
      createRoomTokens(ROOM_TOKEN_SECRET, c),
      new RoomCache(db, { clock: c, refreshMs: opts.roomRefreshMs }),
      c,
      checkoutsPerSecond,
    );
  const newAdmitter = () => {
    const a = new Admitter(databaseUrl, {
      tickMs: opts.roomTickMs,
      checkoutsPerSecond,
      log: (l) => console.error(l),
    });
    a.start();
    admitters.push(a);
    return a;
  };
  const admitters: Admitter[] = [];
  const admitter = newAdmitter();
  const emulator = await startEmulator({
    port: 0,
    webhookSecret: WEBHOOK_SECRET,
    retryBaseMs: opts.retryBaseMs ?? 100,
    ...(opts.emulatorRateLimit ? { rateLimit: opts.emulatorRateLimit } : {}),
  });
  const stripe = createStripe({ stripeSecretKey: 'sk_test_emulator', stripeApiUrl: emulator.url });
  const connection = await Connection.connect({ address: temporalAddress() });
  const temporal = new Client({ connection, namespace: 'default' });
  const deps: ApiDeps = {
    db,
    temporal,
    taskQueue,
    stripe,
    webhookSecret: WEBHOOK_SECRET,
    livemode: false,
    buyers: createBuyerVerifier({ secret: BUYER_TOKEN_SECRET }),
    ...(opts.rateLimits ? { rateLimits: createRateLimits(opts.rateLimits) } : {}),
    ...(opts.trustedProxies ? { trustedProxies: opts.trustedProxies } : {}),
    adminToken: ADMIN_TOKEN,
    supportToken: SUPPORT_TOKEN,
    metrics: createMetrics(db, gate, { admitter, statusMaxAgeMs: opts.statusCountMaxAgeMs }),
    lifecycle: new Lifecycle(),
    logger: opts.logger ?? createLogger('api', { LOG_LEVEL: 'silent' }),
    room: roomOf(clock),
    purchaseTimeoutMs: opts.purchaseTimeoutMs ?? 20_000,
    ...(opts.expireAnswerGraceMs === undefined ? {} : { expireAnswerGraceMs: opts.expireAnswerGraceMs }),
    checkoutsPerSecond,
    // One LISTEN connection for this API, as in api/main.ts: stock changes and checkouts.
    checkouts: new CheckoutWatch(db, checkoutListener),
    admissions: new Admissions(db, gate, clock),
    clock,
    botCheck: new BotCheck(db, clock, opts.botCheck ?? BOT_CHECK),
    pages: { ...(opts.devSignIn ? { devSignInSecret: BUYER_TOKEN_SECRET } : {}), secureCookies: false },
    catalogue: new CatalogueCache(opts.catalogueCacheMs ?? 1000),
  };
  const listen = async (d: ApiDeps): Promise<Server> =>
    new Promise((resolve) => {
      const s = createApp(d).listen(0, '127.0.0.1', () => resolve(s));
    });
  const urlOf = (s: Server) => `http://127.0.0.1:${(s.address() as AddressInfo).port}`;
  const server = await listen(deps);
  const apiUrl = urlOf(server);
  // More API instances, each with its own gate (its own view, permits and notification connection).
  const others: { server: Server; gate: Gate }[] = [];
  emulator.setWebhookUrl(`${apiUrl}/v1/webhooks/stripe`);

  const workers: Array<{ worker: PurchaseWorker; running: Promise<void> }> = [];
  const stopOne = async (w: { worker: PurchaseWorker; running: Promise<void> }) => {
    const i = workers.indexOf(w);
    if (i >= 0) workers.splice(i, 1);
    if (w.worker.getState() === 'RUNNING') w.worker.shutdown();
    await w.running;
  };
  let workerConnection: NativeConnection | undefined;
  let notifications: ReturnType<typeof notificationParts> | undefined;

  const system: System = {
    async startAnotherApi(o = {}) {
      const otherClock = await clockOf(o.hostClockSkewMs);
      const otherGate = new Gate(db, databaseUrl, { clock: otherClock, resyncMs: opts.gateResyncMs });
      await otherGate.start();
      const other = await listen({
        ...deps,
        metrics: createMetrics(db, otherGate, { admitter: newAdmitter(), statusMaxAgeMs: opts.statusCountMaxAgeMs }),
        admissions: new Admissions(db, otherGate, otherClock),
        clock: otherClock,
        room: roomOf(otherClock),
        botCheck: new BotCheck(db, otherClock, opts.botCheck ?? BOT_CHECK),
        catalogue: new CatalogueCache(opts.catalogueCacheMs ?? 1000),
      });
      others.push({ server: other, gate: otherGate });
      return urlOf(other);
    },
    db,
    databaseUrl,
    temporal,
    emulator,
    taskQueue,
    apiUrl,
    lifecycle: deps.lifecycle,
    notificationLines: () => notifications?.lines ?? [],
    admitters,
    clockErrorMs: () => Math.max(...clocks.map((c) => c.offset().errorMs)),
    async startWorker(limits = {}) {
      workerConnection ??= await NativeConnection.connect({ address: temporalAddress() });
      notifications ??=
        opts.notify && notificationParts(db, new Client({ connection: workerConnection }), taskQueue, opts.notify);
      const worker = await createPurchaseWorker({
        stripeRequestsPerSecond: 20,
        ...limits,
        connection: workerConnection,
        namespace: 'default',
        taskQueue,
        workflowBundle: await workflowBundle(),
        deps: {
          db,
          stripe,
          desk: new HoldDesk(db),
          clock,
          successUrl: `${apiUrl}/purchases/{purchaseId}?result=paid`,
          cancelUrl: `${apiUrl}/purchases/{purchaseId}?result=cancel`,
          ...(notifications ? { notifier: notifications.notifier } : {}),
        },
        ...(notifications ? { notificationActivities: notifications.activities } : {}),
      });
      const started = { worker, running: worker.run() };
      workers.push(started);
      return { stop: () => stopOne(started) };
    },
    async stopWorker() {
      await Promise.all([...workers].map(stopOne));
    },
    async api(method, path, body, headers = {}) {
      const res = await fetch(path.startsWith('http') ? path : `${apiUrl}${path}`, {
        method,
        headers: { ...(body !== undefined ? { 'content-type': 'application/json' } : {}), ...headers },
        body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
      });
      const text = await res.text();
      let parsed: unknown = text;
      try {
        parsed = JSON.parse(text);
      } catch {
        // not JSON (metrics)
      }
      return { status: res.status, body: parsed, headers: res.headers };
    },
    async emulatorCall(method, path, body) {
      const res = await fetch(`${emulator.url}${path}`, {
        method,
        headers: body !== undefined ? { 'content-type': 'application/json' } : {},
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      return { status: res.status, body: await res.json().catch(() => null) };
    },
    async createProduct(overrides = {}) {
      const sku = (overrides.sku as string) ?? uniqueSku('e2e');
      const res = await system.api(
        'POST',
        '/v1/products',
        { sku, name: 'Test sneaker', priceCents: 5000, currency: 'usd', stock: 5, holdSeconds: 600, ...overrides },
        { authorization: `Bearer ${ADMIN_TOKEN}` },
      );
      if (res.status !== 201) throw new Error(`creating product: ${res.status} ${JSON.stringify(res.body)}`);
      return sku;
    },
    async buy(sku, buyerId, extra = {}, key = randomUUID()) {
      const headers = { 'idempotency-key': key, ...(await asBuyer(buyerId)) };
      return system.api('POST', '/v1/purchases', { sku, ...extra }, headers);
    },
    purchase(purchaseId) {
      return system.api('GET', `/v1/purchases/${purchaseId}`, undefined, AS_SUPPORT);
    },
    async stock(sku) {
      return (await system.api('GET', `/v1/products/${sku}`)).body;
    },
    pay(sessionId, outcome, extra = {}) {
      return system.emulatorCall('POST', `/_emulator/sessions/${sessionId}/pay`, { outcome, ...extra });
    },
    async waitForPurchase(purchaseId, pred, timeoutMs = 30_000) {
      const deadline = Date.now() + timeoutMs;
      let last: any;
      for (;;) {
        const { rows } = await db.query('SELECT * FROM purchases WHERE purchase_id = $1', [purchaseId]);
        last = rows[0];
        if (last && pred(last)) return last;
        if (Date.now() > deadline)
          throw new Error(`purchase ${purchaseId} never matched; last: ${JSON.stringify(last)}`);
        await new Promise((r) => setTimeout(r, 50));
      }
    },
    async close() {
      await system.stopWorker();
      await workerConnection?.close();
      for (const s of [server, ...others.map((o) => o.server)]) {
        const closed = new Promise((r) => s.close(r));
        s.closeAllConnections();
        await closed;
      }
      for (const o of others) await o.gate.close();
      for (const a of admitters) await a.close();
      await emulator.close();
      await connection.close();
      await gate.close();
      await checkoutListener.close();
      for (const c of clocks) c.close();
      await db.end();
    },
  };
  if (opts.worker !== false) await system.startWorker();
  return system;
}
