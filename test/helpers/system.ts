import { randomUUID } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import { setTimeout as delay } from 'node:timers/promises';
import { Client, Connection } from '@temporalio/client';
import { NativeConnection } from '@temporalio/worker';
import pg from 'pg';
import {
  type Emulator,
  type PayControlExtras,
  sessionIdOfCheckoutUrl,
  startEmulator,
} from '@flash-sale/stripe-emulator';
import { isFinal } from '../../vocabulary';
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
import type { WorkerDeploymentVersion } from '@temporalio/common';
import { uniqueSku } from './db';
import type { SystemOptions } from './system-options';
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
export type { SystemOptions } from './system-options';
export { createOwnDatabase } from './own-database';
export { temporalAddress, workflowBundle } from './temporal';

export interface System {
  db: pg.Pool;
  /** Its database (the suite's, or its own with `ownDatabase`): worker processes of the test use it too. */
  databaseUrl: string;
  temporal: Client;
  emulator: Emulator;
  taskQueue: string;
  apiUrl: string;
  /** The API's shutdown: set `draining`, or `close()`, to see what a shutting-down API answers. */
  lifecycle: ApiDeps['lifecycle'];
  /** What the worker's notification channels logged (with the `notify` option). */
  notificationLines(): string[];
  /** The waiting rooms' admitter of each API instance (the first is this API's): one of them holds the lock. */
  admitters: Admitter[];
  /**
   * Another API instance on its own port, with its own gate and clock, against the same Postgres and
   * Temporal. `hostClockSkewMs`: its host's clock runs this far ahead (negative: behind) of the real
   * one, as on a host whose NTP is broken. Returns its URL.
   */
  startAnotherApi(opts?: { hostClockSkewMs?: number }): Promise<string>;
  /**
   * The largest error bound of the API instances' clocks (ms): each reads Postgres's time give or
   * take this much (half its quickest round trip when it measured, longer on a loaded machine).
   */
  clockErrorMs(): number;
  /** Starts a worker in this process (tests that kill workers run their own in a child process). */
  startWorker(limits?: {
    maxConcurrentActivities?: number;
    maxConcurrentLocalActivities?: number;
    maxConcurrentStripeCalls?: number;
    maxConcurrentWorkflowTasks?: number;
    /** The Stripe budget (requests/s); default 20, a sandbox key's default. */
    stripeRequestsPerSecond?: number;
    /** Worker Versioning: the version this worker polls as. Several workers may run at once (a deploy). */
    deployment?: WorkerDeploymentVersion;
  }): Promise<{ stop(): Promise<void> }>;
  /** Stops every worker startWorker started. */
  stopWorker(): Promise<void>;
  /** An HTTP call to the API (`path` may be a full URL, for another API instance). */
  api(
    method: string,
    path: string,
    body?: unknown,
    headers?: Record<string, string>,
  ): Promise<{ status: number; body: any; headers: Headers }>;
  emulatorCall(method: string, path: string, body?: unknown): Promise<{ status: number; body: any }>;
  createProduct(overrides?: Record<string, unknown>): Promise<string>;
  buy(
    sku: string,
    buyerId: string,
    extra?: Record<string, unknown>,
    key?: string,
  ): Promise<{ status: number; body: any; headers: Headers }>;
  /** GET /v1/purchases/:id as support (who may read any purchase). */
  purchase(purchaseId: string): Promise<{ status: number; body: any; headers: Headers }>;
  /** The body of GET /v1/products/:sku: the stock as a buyer sees it. */
  stock(sku: string): Promise<any>;
  pay(sessionId: string, outcome: string, extra?: PayControlExtras): Promise<{ status: number; body: any }>;
  /** Waits until the purchase record satisfies `pred` (polling), or fails with the last record seen. */
  waitForPurchase(purchaseId: string, pred: (p: any) => boolean, timeoutMs?: number): Promise<any>;
  close(): Promise<void>;
}

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

/** The Checkout Session id of a purchase. */
export async function sessionOf(db: pg.Pool, purchaseId: string): Promise<string> {
  const { rows } = await db.query('SELECT checkout_session_id FROM purchases WHERE purchase_id = $1', [purchaseId]);
  return rows[0].checkout_session_id;
}

/**
 * The buyers of a crowd who got a unit, with their purchase and Checkout Session. Each is answered 201
 * with its checkout URL or, on a loaded machine, 202: the contract's answer for a hold whose session is
 * not open within the wait. A 202 is followed until its session opens, so every winner has one.
 */
export async function winnersOf(
  sys: System,
  answers: { status: number; body: any }[],
): Promise<{ purchaseId: string; sessionId: string }[]> {
  const won = answers.filter((a) => a.status === 201 || a.status === 202);
  return Promise.all(
    won.map(async ({ status, body }) => {
      if (status === 201) return { purchaseId: body.purchaseId, sessionId: sessionIdOfCheckoutUrl(body.checkoutUrl) };
      if (!body.holdExpiresAt) throw new Error(`a 202 without a hold: ${JSON.stringify(body)}`);
      const p = await sys.waitForPurchase(body.purchaseId, (r) => r.checkout_session_id !== null || isFinal(r.status));
      if (p.checkout_session_id === null) throw new Error(`a 202 that ended without a session: ${JSON.stringify(p)}`);
      return { purchaseId: body.purchaseId, sessionId: p.checkout_session_id };
    }),
  );
}

/**
 * Sells a unit of `sku` to `buyer`: buys it and pays for it. The payment is forced: a short hold may
 * lapse before the payment lands on a loaded machine (its session expired by the saga), and the late
 * payment then re-takes the unit, `late_confirmed` instead of `confirmed`; sold either way, which is
 * what a test that needs the unit gone asks for. Returns the purchase once it is sold.
 */
export async function sellTo(sys: System, sku: string, buyer: string): Promise<{ purchaseId: string; status: string }> {
  let res = await sys.buy(sku, buyer);
  // A unit whose hold just lapsed may read as held in the API's view of the stock a moment longer
  // (409 sold-out, final: false, with retryAt): the buyer tries again when told, as a buyer would.
  for (let tries = 1; res.status === 409 && res.body.final === false && tries < 20; tries++) {
    const wait = Date.parse(String(res.body.retryAt)) - Date.now();
    await delay(Math.min(1000, Math.max(100, Number.isFinite(wait) ? wait : 0)));
    res = await sys.buy(sku, buyer);
  }
  if (res.status !== 201) throw new Error(`buying: ${res.status} ${JSON.stringify(res.body)}`);
  const purchaseId = res.body.purchaseId as string;
  const paid = await sys.pay(await sessionOf(sys.db, purchaseId), 'succeeded', { force: true });
  if (paid.status !== 200) throw new Error(`paying: ${paid.status} ${JSON.stringify(paid.body)}`);
  const sold = await sys.waitForPurchase(purchaseId, (r) => ['confirmed', 'late_confirmed'].includes(r.status));
  return { purchaseId, status: sold.status };
}
