import { Connection, isRetryableError, makeGrpcRetryInterceptor, type ConnectionOptions } from '@temporalio/client';
import pg from 'pg';
import Stripe from 'stripe';
import type { NativeConnectionOptions } from '@temporalio/worker';
import { QUERY_TIMEOUT_MARGIN_MS, type PoolTimeouts, type StripeConfig } from './index';
import type { TemporalSettings } from './temporal';
import { variable } from './variables';

// Long-lived clients, built once by an entry point from its configuration.

/** Postgres ends a session left idle inside a transaction this long (a leaked client holding locks). */
const IDLE_IN_TRANSACTION_MS = 10_000;

/** The pool of one API process (api/main.ts). */
export const API_POOL_SIZE = 30;
/**
 * Every Postgres connection one API process holds: its pool, the LISTEN connection of its gate and
 * checkouts (store/notify-listener.ts) and its waiting-room admitter's (store/admitter.ts).
 */
export const API_POSTGRES_CONNECTIONS = API_POOL_SIZE + 2;

/**
 * A Postgres pool with an error listener: an idle connection the server dropped is replaced on next
 * use, and is logged rather than crashing the process. With `timeouts`, nothing waits unbounded: a
 * query that cannot get a connection in `connectTimeoutMs` (pool full, or Postgres unreachable)
 * fails, Postgres cancels a statement past `statementTimeoutMs` (57014), and the client gives up on
 * a server that stopped answering soon after. TCP keepalive finds connections whose peer vanished.
 */
export function createPool(
  databaseUrl: string,
  max: number,
  log: (msg: string) => void,
  timeouts?: PoolTimeouts,
): pg.Pool {
  const pool = new pg.Pool({
    connectionString: databaseUrl,
    max,
    keepAlive: true,
    ...(timeouts && {
      connectionTimeoutMillis: timeouts.connectTimeoutMs,
      idleTimeoutMillis: timeouts.idleTimeoutMs,
      statement_timeout: timeouts.statementTimeoutMs,
      query_timeout: timeouts.statementTimeoutMs + QUERY_TIMEOUT_MARGIN_MS,
      idle_in_transaction_session_timeout: IDLE_IN_TRANSACTION_MS,
    }),
  });
  pool.on('error', (err) => log(`postgres connection error: ${err.message}`));
  // A connection Postgres ends while it is checked out (between a query's answer and its release)
  // emits 'error' with none of the pool's listeners on it, which would take the process down: seen
  // when Postgres stopped under load. Logged instead; its next query fails and the pool drops it.
  pool.on('connect', (client) =>
    client.on('error', (err) => log(`postgres connection error (in use): ${err.message}`)),
  );
  return pool;
}

/**
 * The Stripe API version every request names (`Stripe-Version`), pinned here rather than left to
 * the account's default: the shapes the saga reads (sessions, refunds, events) stay the same until
 * this line changes with a stripe-node upgrade. The webhook endpoint should use it too (docs/stripe.md).
 */
export const STRIPE_API_VERSION: Stripe.LatestApiVersion = '2026-10-28.endive';

/** How long stripe-node waits for one answer from Stripe before it gives the call up. */
export const STRIPE_REQUEST_TIMEOUT_MS = 15_000;

/** stripe-node against api.stripe.com, or against the payments emulator when `stripeApiUrl` is given. */
export function createStripe(config: Pick<StripeConfig, 'stripeSecretKey' | 'stripeApiUrl'>): Stripe {
  // Temporal retries activities with the same idempotency key; stripe-node need not retry too.
  const common = { apiVersion: STRIPE_API_VERSION, maxNetworkRetries: 0, timeout: STRIPE_REQUEST_TIMEOUT_MS };
  if (!config.stripeApiUrl) return new Stripe(config.stripeSecretKey, common);
  const u = new URL(config.stripeApiUrl);
  return new Stripe(config.stripeSecretKey, {
    ...common,
    host: u.hostname,
    port: Number(u.port || (u.protocol === 'https:' ? 443 : 80)),
    protocol: u.protocol.replace(':', '') as 'http' | 'https',
  });
}

type Interceptor = NonNullable<ConnectionOptions['interceptors']>[number];

/**
 * The API's calls to Temporal: each call that set no deadline of its own (`withDeadline`) gets one
 * `callTimeoutMs` from now, and what the SDK would retry is retried twice (after 100 ms, then 200 ms)
 * instead of ten times over about twenty seconds: with the server down, the caller learns it in a
 * third of a second and answers 503. Every retry keeps the call's deadline.
 */
function briefCalls(callTimeoutMs: number): Interceptor {
  const retry = makeGrpcRetryInterceptor({
    delayFunction: (attempt) => 100 * 2 ** (attempt - 1),
    retryableDecider: (attempt, status) => attempt < 3 && isRetryableError(status),
  });
  return (options, nextCall) =>
    retry(
      options.deadline === undefined || options.deadline === Infinity
        ? { ...options, deadline: Date.now() + callTimeoutMs }
        : options,
      nextCall,
    );
}

/** What a connection needs of the settings: address, TLS, API key and metadata (the namespace goes to the Client). */
function connectionOptions(s: TemporalSettings) {
  return {
    address: s.address,
    ...(s.tls !== undefined ? { tls: s.tls } : {}),
    ...(s.apiKey ? { apiKey: s.apiKey } : {}),
    ...(s.metadata ? { metadata: s.metadata } : {}),
  };
}

/**
 * A Temporal client connection (the API and the CLIs; the worker uses a NativeConnection). It fails
 * when Temporal has not answered within `connectTimeoutMs` (TEMPORAL_CONNECT_TIMEOUT_MS; default
 * 10 s). With `limits` (the API), calls are brief (see `briefCalls`) and a lost connection is tried
 * again at least every second (gRPC's own backoff grows to two minutes), so the API resumes as soon
 * as the server is back.
 */
export function connectTemporal(
  settings: TemporalSettings,
  connectTimeoutMs = Number(variable('TEMPORAL_CONNECT_TIMEOUT_MS').default),
  limits?: { callTimeoutMs: number },
): Promise<Connection> {
  const base = { ...connectionOptions(settings), connectTimeout: connectTimeoutMs };
  if (!limits) return Connection.connect(base);
  return Connection.connect({
    ...base,
    interceptors: [briefCalls(limits.callTimeoutMs)],
    channelArgs: { 'grpc.initial_reconnect_backoff_ms': 250, 'grpc.max_reconnect_backoff_ms': 1_000 },
  });
}

/** The worker's NativeConnection options from the same settings. */
export function nativeConnectionOptions(settings: TemporalSettings): NativeConnectionOptions {
  return connectionOptions(settings);
}

/** gRPC's NOT_FOUND: what DescribeNamespace answers for a namespace the server does not have. */
const GRPC_NOT_FOUND = 5;

/**
 * Stops a process at start when the Temporal server has no namespace `namespace`: otherwise it would
 * report ready while every saga start failed (the API answering 503 "retry" to every buyer).
 */
export async function requireNamespace(
  connection: { workflowService: { describeNamespace(r: { namespace: string }): Promise<unknown> } },
  namespace: string,
  address: string,
): Promise<void> {
  try {
    await connection.workflowService.describeNamespace({ namespace });
  } catch (err) {
    if ((err as { code?: unknown } | null)?.code !== GRPC_NOT_FOUND) throw err;
    throw new Error(
      `Temporal at ${address} has no namespace "${namespace}" (TEMPORAL_NAMESPACE): create it ` +
        `(temporal operator namespace create --namespace ${namespace}) or name one it has`,
      { cause: err },
    );
  }
}

/** A failure that says the service cannot be reached (refused, unknown host, timed out, no such database, wrong password). */
function unreachable(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  if (
    typeof code === 'string' &&
    (/^E[A-Z_]+$/.test(code) || /^(08|28)/.test(code) || code === '3D000' || code === '57P03')
  )
    return true;
  return /timeout|Connection terminated/i.test((err as Error | null)?.message ?? '');
}

/** Where a Postgres URL points, without its credentials: `host:port/database`. */
export function postgresTarget(databaseUrl: string): string {
  try {
    const u = new URL(databaseUrl);
    return `${u.hostname}:${u.port || '5432'}${u.pathname}`;
  } catch {
    return 'the configured server';
  }
}

/**
 * The first contact with Postgres or Temporal (an entry point at start, a CLI): a failure to connect
 * names the service, where it was looked for and the variable that says so, as every line an
 * operator reads should. Any other failure (a migration that does not apply) goes on as it was.
 */
export async function reaching<T>(
  service: { name: 'Postgres'; databaseUrl: string } | { name: 'Temporal'; address: string },
  step: () => Promise<T>,
): Promise<T> {
  try {
    return await step();
  } catch (err) {
    if (service.name === 'Postgres' && !unreachable(err)) throw err;
    const [where, variable] =
      service.name === 'Postgres'
        ? [postgresTarget(service.databaseUrl), 'DATABASE_URL']
        : [service.address, 'TEMPORAL_ADDRESS'];
    throw new Error(`cannot reach ${service.name} at ${where} (${variable}): ${(err as Error).message}`, {
      cause: err,
    });
  }
}
