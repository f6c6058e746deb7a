// First: tracing (when the OTEL_* variables ask for it) must be on before http, Koa and pg load.
import './start-tracing';
import { Client } from '@temporalio/client';
import {
  API_POOL_SIZE,
  connectTemporal,
  createPool,
  createStripe,
  reaching,
  requireNamespace,
} from '../config/clients';
import { isLiveKey, loadApiConfig } from '../config';
import { createBuyerVerifier } from '../config/buyer-tokens';
import { createLogger, exitOnFailure, type Logger } from '../config/log';
import { activeTracing, temporalClientInterceptors } from '../config/tracing';
import { LISTEN_BACKLOG, listening } from '../config/listen';
import { describeTemporal } from '../config/temporal';
import { createRoomTokens } from '../config/room-tokens';
import { Admitter } from '../store/admitter';
import { DbClock } from '../store/clock';
import { RoomCache } from '../store/room-cache';
import { Admissions } from '../store/admission';
import { CheckoutWatch } from '../store/checkout-watch';
import { Gate } from '../store/gate';
import { NotifyListener } from '../store/notify-listener';
import { prepareSchema } from '../store/migrate';
import { createApp } from './app';
import { DRAIN_MS, Lifecycle } from './shutdown';
import { BotCheck } from './bot-check';
import { CatalogueCache } from './catalogue-view';
import type { ApiDeps } from './deps';
import { createMetrics } from './metrics';
import { createRateLimits } from './rate-limits';
import { WaitingRoom } from './waiting-room';

let logger: Logger | undefined;

// The API process. On SIGINT/SIGTERM: /readyz turns 503, in-flight requests finish, then the
// Temporal connection and the pool close.
async function main(): Promise<void> {
  logger = createLogger('api');
  const config = loadApiConfig(process.env);
  const root = logger;
  const log = (line: string) => root.info(line);
  // Migrates (several processes may boot at once: an advisory lock serialises them), or with
  // MIGRATE_AT_BOOT=0 only checks that nothing is missing.
  await reaching({ name: 'Postgres', databaseUrl: config.databaseUrl }, () =>
    prepareSchema(config.databaseUrl, config.migrateAtBoot, log),
  );
  // Short timeouts (PG_CONNECT_TIMEOUT_MS, PG_STATEMENT_TIMEOUT_MS): with Postgres gone, 503 at once.
  const db = createPool(config.databaseUrl, API_POOL_SIZE, (line) => root.warn(line), config.pool);
  // Postgres's clock, by this host's plus a measured offset: the opening and every lapse are decided by it.
  const clock = new DbClock(db, { log: (line) => root.warn(line) });
  await clock.start();
  const { offsetMs, errorMs } = clock.offset();
  log(`clock: Postgres's is ${offsetMs.toFixed(1)} ms from this host's (± ${errorMs.toFixed(1)} ms)`);
  // One LISTEN connection for the process: the gate's stock changes and the purchases' checkouts.
  const listener = new NotifyListener(config.databaseUrl, (line) => root.warn(line));
  const gate = new Gate(db, config.databaseUrl, {
    clock,
    resyncMs: config.gateResyncMs,
    log: (line) => root.warn(line),
    listener,
  });
  const checkouts = new CheckoutWatch(db, listener);
  await listener.start();
  await gate.start();
  // Every process may become the rooms' one admitter (an advisory lock decides which).
  const admitter = new Admitter(config.databaseUrl, {
    tickMs: config.roomAdmitTickMs,
    checkoutsPerSecond: config.stripeMaxSessionsPerSecond,
    log,
  });
  admitter.start();
  const connection = await reaching({ name: 'Temporal', address: config.temporal.address }, () =>
    connectTemporal(config.temporal, config.temporalConnectTimeoutMs, { callTimeoutMs: config.temporalCallTimeoutMs }),
  );
  await requireNamespace(connection, config.temporalNamespace, config.temporal.address);
  const deps: ApiDeps = {
    db,
    temporal: new Client({
      connection,
      namespace: config.temporalNamespace,
      interceptors: temporalClientInterceptors(),
    }),
    taskQueue: config.taskQueue,
    admissions: new Admissions(db, gate, clock),
    clock,
    botCheck: new BotCheck(db, clock, config.botCheck),
    room: new WaitingRoom(
      db,
      createRoomTokens(config.roomTokenSecret, clock, { sealed: config.roomTicketsSealed }),
      new RoomCache(db, { clock, refreshMs: config.roomRefreshMs }),
      clock,
      config.stripeMaxSessionsPerSecond,
      config.roomMaxPollSeconds,
    ),
    stripe: createStripe(config),
    webhookSecret: config.stripeWebhookSecret,
    livemode: isLiveKey(config.stripeSecretKey),
    buyers: createBuyerVerifier(config.buyerTokens),
    rateLimits: createRateLimits(config.rateLimits),
    trustedProxies: config.trustedProxies,
    adminToken: config.adminToken,
    supportToken: config.supportToken,
    metricsToken: config.metricsToken,
    metrics: createMetrics(db, gate, { admitter }),
    lifecycle: new Lifecycle(),
    logger: root,
    purchaseTimeoutMs: config.purchaseTimeoutMs,
    expireAnswerGraceMs: config.expireAnswerGraceMs,
    checkouts,
    checkoutsPerSecond: config.stripeMaxSessionsPerSecond,
    catalogue: new CatalogueCache(config.catalogueCacheMs),
    pages: {
      ...(config.devSignIn ? { devSignInSecret: config.buyerTokens.secret } : {}),
      publicOrigin: new URL(config.publicUrl).origin,
      secureCookies: config.publicUrl.startsWith('https:'),
    },
  };
  const server = createApp(deps).listen({ port: config.port, host: config.host, backlog: LISTEN_BACKLOG });
  await listening(server, { port: config.port, host: config.host, portVar: 'PORT', hostVar: 'HOST' });
  log(`listening on http://${config.host}:${config.port}; Temporal ${describeTemporal(config.temporal)}`);
  log(
    config.trustedProxies.length
      ? `client addresses: from X-Forwarded-For when the peer is ${config.trustedProxies.join(', ')} (TRUSTED_PROXIES), else the peer`
      : 'client addresses: the connecting peer (no TRUSTED_PROXIES: X-Forwarded-For is ignored)',
  );
  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    log(
      `${signal}, draining: /readyz answers 503 for ${config.shutdownGraceMs} ms (SHUTDOWN_GRACE_MS), then the listener closes and requests in flight get ${DRAIN_MS} ms`,
    );
    deps.lifecycle.draining = true;
    // /readyz answers 503 for a while before the listener closes, so load balancers stop sending first.
    await new Promise((r) => setTimeout(r, config.shutdownGraceMs));
    const open = await new Promise<number>((r) => server.getConnections((_, n) => r(n)));
    log(`drain: closing the listener, ${open} connection(s) open`);
    // The requests waiting on a saga answer what they have now, inside the drain.
    deps.lifecycle.close();
    const closed = new Promise((r) => server.close(r)).then(() => true);
    server.closeIdleConnections();
    const drained = await Promise.race([closed, new Promise<false>((r) => setTimeout(() => r(false), DRAIN_MS))]);
    if (!drained) root.warn(`drain: requests still in flight after ${DRAIN_MS} ms; closing their connections`);
    else log('drain: every request answered');
    server.closeAllConnections();
    await connection.close();
    await admitter.close();
    await gate.close();
    await listener.close();
    clock.close();
    await db.end();
    await activeTracing()?.shutdown();
    log('stopped: Temporal connection, Postgres pool and listeners closed');
    // The lines still being written first: on exit pino writes what it holds at once, ahead of a
    // write in flight (a pipe that was full), and the drain's last lines would come out after this one.
    await new Promise<void>((resolve) => root.flush(() => resolve()));
    process.exit(0);
  };
  process.on('SIGINT', () => void stop('SIGINT'));
  process.on('SIGTERM', () => void stop('SIGTERM'));
}

main().catch((err) => exitOnFailure(logger, err));
