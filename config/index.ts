import { existsSync } from 'node:fs';
import { isHttpUrl, Reader, type Env } from './reader';
import { variable } from './variables';
import { isLoopback } from './listen';
import { isDevelopment, isLiveKey, stripe, type StripeConfig } from './stripe';

export { isDevelopment, isLiveKey, STRIPE_ACCOUNT_LIMITS, type StripeConfig } from './stripe';
import { MIN_SECRET_LENGTH, type BuyerTokenConfig } from './buyer-tokens';
import { workerDeployment, type WorkerDeploymentVersion } from './temporal';
import {
  common,
  poolTimeouts,
  publicUrl,
  QUERY_TIMEOUT_MARGIN_MS,
  serviceStart,
  temporal,
  type CommonConfig,
  type PoolTimeouts,
  type ServiceStart,
} from './common';
import { roomSecretFromBuyerSecret } from './room-tokens';
import { trustedProxies } from './trusted-proxies';
import { ACTIVITY_TIMEOUT_MS } from '../vocabulary/limits';

// One typed, validated configuration per process, read from the environment by the entry points
// (api/main.ts, worker/main.ts, the ops/ CLIs) and nowhere else. A missing or malformed value
// stops the process with a message naming every problem at once.

export { ConfigError } from './reader';
export { QUERY_TIMEOUT_MARGIN_MS, type CommonConfig, type PoolTimeouts, type ServiceStart } from './common';

export interface ApiConfig extends CommonConfig, StripeConfig, ServiceStart {
  stripeWebhookSecret: string;
  port: number;
  host: string;
  adminToken: string;
  supportToken: string;
  /** The bearer token of GET /metrics (METRICS_TOKEN); empty: /metrics is open, allowed only on a loopback HOST. */
  metricsToken: string;
  /** How long /readyz says 503 before the listener closes on SIGTERM. */
  shutdownGraceMs: number;
  /** How long POST /v1/purchases waits for the hold and the Checkout Session before answering 503. */
  purchaseTimeoutMs: number;
  /** How long after a hold's lapse the webhook takes its session's expiry for the saga's own expire call. */
  expireAnswerGraceMs: number;
  /** How often the gate reads every SKU's stock again even without a notification. */
  gateResyncMs: number;
  /** How buyer tokens (JWTs) are verified. */
  buyerTokens: BuyerTokenConfig;
  /**
   * Purchase requests per buyer per minute and per client IP per second, page reads and bot-check
   * challenges per client IP per second (0: off).
   */
  rateLimits: {
    perBuyerPerMinute: number;
    perIpPerSecond: number;
    pagesPerIpPerSecond: number;
    challengesPerIpPerSecond: number;
  };
  /** The balancers whose X-Forwarded-For names the client (TRUSTED_PROXIES); empty: the socket's address. */
  trustedProxies: string[];
  /** How long each process answers the home page's catalogue from what it last read. */
  catalogueCacheMs: number;
  /** Timeouts of the API's Postgres pool: short, so an outage answers 503 at once. */
  pool: PoolTimeouts;
  /** The deadline of each Temporal call that does not wait for a saga (start, signal, describe). */
  temporalCallTimeoutMs: number;
  /** How long the first connection to Temporal may take before the API stops, naming TEMPORAL_ADDRESS. */
  temporalConnectTimeoutMs: number;
  /** Where the buyer's pages are served (PUBLIC_URL): their forms must come from this origin. */
  publicUrl: string;
  /**
   * The development sign-in of the buyer's pages (a name becomes a buyer token signed with
   * BUYER_TOKEN_SECRET): on only with DEV_SIGN_IN=1, never beside a live key or without the secret.
   */
  devSignIn: boolean;
  /** Signs waiting-room tickets and admission tokens: ROOM_TOKEN_SECRET, else derived from BUYER_TOKEN_SECRET. */
  roomTokenSecret: string;
  /** Tickets signed with their claims encrypted (ROOM_TICKETS_SEALED, default 1); both kinds are read. */
  roomTicketsSealed: boolean;
  /** How often each process reads a room's serving counter again while it is polled. */
  roomRefreshMs: number;
  /** How often the admitter (one process of all) steps every room. */
  roomAdmitTickMs: number;
  /** The longest a buyer in a room's line is told to wait before asking again (ROOM_MAX_POLL_SECONDS). */
  roomMaxPollSeconds: number;
  /**
   * The bot check of products with `botCheck` (api/bot-check.ts): the HMAC secret that signs its
   * challenges (BOT_CHECK_SECRET, the same on every API process) and their cost, the largest counter
   * a solver may have to reach (BOT_CHECK_MAX_NUMBER).
   */
  botCheck: { secret: string; maxNumber: number };
}

export interface WorkerConfig extends CommonConfig, StripeConfig, ServiceStart {
  /** Where the buyer's pages are served (the default base of the Checkout success and cancel URLs). */
  publicUrl: string;
  /** Where Checkout sends the buyer after paying, and after leaving it; `{purchaseId}` is replaced. */
  checkoutSuccessUrl: string;
  checkoutCancelUrl: string;
  sweepIntervalMs: number;
  /** Timeouts of the worker's Postgres pool: a query gives up before its activity's attempt does. */
  pool: PoolTimeouts;
  /** Activities, local activities (the hold) and Stripe calls one worker runs at once; the pool has a connection for each. */
  maxActivities: number;
  maxLocalActivities: number;
  maxStripeCalls: number;
  /** Where the worker serves /healthz and /metrics (WORKER_METRICS_PORT; 0: a free port, logged). */
  metrics: { port: number; host: string };
  /** A workflow bundle built beforehand (WORKFLOW_BUNDLE_PATH); else the image's, else bundled at start. */
  workflowBundlePath?: string;
  /** Worker Versioning (WORKER_DEPLOYMENT_NAME and WORKER_BUILD_ID); off when unset. */
  deployment?: WorkerDeploymentVersion;
}

/** PURCHASE_ID: the placeholder of the Checkout return URLs, replaced by the purchase id. */
export const PURCHASE_ID_PLACEHOLDER = '{purchaseId}';

/** CHECKOUT_SUCCESS_URL / CHECKOUT_CANCEL_URL: an absolute http(s) URL once `{purchaseId}` is filled in. */
function checkoutUrl(r: Reader, name: string, dflt: string): string {
  const url = r.text(name, dflt);
  let ok: boolean;
  try {
    const parsed = new URL(url.replaceAll(PURCHASE_ID_PLACEHOLDER, 'pur_0'));
    ok = parsed.protocol === 'https:' || parsed.protocol === 'http:';
  } catch {
    ok = false;
  }
  if (!ok)
    r.problems.push(
      `${name} must be an absolute http(s) URL (with ${PURCHASE_ID_PLACEHOLDER} where the purchase id goes), got "${url}"`,
    );
  else if (!url.includes(PURCHASE_ID_PLACEHOLDER)) {
    r.problems.push(
      `${name} must contain ${PURCHASE_ID_PLACEHOLDER}: the page it opens needs to know which purchase it is about`,
    );
  }
  return url;
}

/** Admin and support tokens outside development: long enough not to be guessed. */
const MIN_TOKEN_LENGTH = 32;

/** A bearer token for operators: required, and outside development at least MIN_TOKEN_LENGTH characters. */
function operatorToken(r: Reader, name: string, why: string): string {
  return longEnough(r, name, r.need(name, why));
}

function longEnough(r: Reader, name: string, token: string): string {
  // A live key is never development, whatever STRIPE_EMULATOR says (that conflict is reported too):
  // every problem of such a configuration in one list, not one after the other.
  const development = isDevelopment(r.env) && !isLiveKey(r.env.STRIPE_SECRET_KEY ?? '');
  if (token && !development && token.length < MIN_TOKEN_LENGTH) {
    r.problems.push(
      `${name} must be at least ${MIN_TOKEN_LENGTH} characters outside development (STRIPE_EMULATOR=1 with a test key)`,
    );
  }
  return token;
}

/** Only this machine can reach a listener on these (`npm start`'s default HOST). */

/**
 * METRICS_TOKEN, the bearer token of GET /metrics (stock per SKU, sales, errors: not for anyone who
 * reaches the port). Optional while the API listens on loopback only; required beyond it.
 */
function metricsToken(r: Reader, host: string): string {
  const token = longEnough(r, 'METRICS_TOKEN', r.text('METRICS_TOKEN'));
  if (!token && !isLoopback(host)) {
    r.problems.push(
      `METRICS_TOKEN is required when the API listens beyond loopback (HOST=${host}): the bearer token Prometheus scrapes GET /metrics with`,
    );
  }
  return token;
}

function buyerTokens(r: Reader): BuyerTokenConfig {
  const secret = r.raw('BUYER_TOKEN_SECRET');
  const jwksUrl = r.raw('BUYER_JWKS_URL');
  if (!secret && !jwksUrl) {
    r.problems.push('BUYER_TOKEN_SECRET or BUYER_JWKS_URL is required (how buyer tokens are verified)');
  }
  if (secret && secret.length < MIN_SECRET_LENGTH) {
    r.problems.push(`BUYER_TOKEN_SECRET must be at least ${MIN_SECRET_LENGTH} characters`);
  }
  if (jwksUrl && !isHttpUrl(jwksUrl)) r.problems.push(`BUYER_JWKS_URL must be an http(s) URL, got "${jwksUrl}"`);
  return {
    secret,
    jwksUrl,
    issuer: r.raw('BUYER_TOKEN_ISSUER'),
    audience: r.raw('BUYER_TOKEN_AUDIENCE'),
  };
}

/** `npm run buyer-token`: the HS256 secret it signs with, and the claims the API checks. */
export function loadBuyerTokenCliConfig(env: Env): BuyerTokenConfig & { secret: string } {
  const r = new Reader(env, 'cli');
  const secret = r.need('BUYER_TOKEN_SECRET', 'the HS256 secret the API verifies buyer tokens with');
  return r.done({ ...buyerTokens(r), secret });
}

/** ROOM_TOKEN_SECRET, else one derived from BUYER_TOKEN_SECRET (every API process has the same). */
function roomTokenSecret(r: Reader, buyers: BuyerTokenConfig): string {
  const own = r.raw('ROOM_TOKEN_SECRET');
  if (own) {
    if (own.length < MIN_SECRET_LENGTH)
      r.problems.push(`ROOM_TOKEN_SECRET must be at least ${MIN_SECRET_LENGTH} characters`);
    return own;
  }
  if (buyers.secret) return roomSecretFromBuyerSecret(buyers.secret);
  if (buyers.jwksUrl) r.problems.push('ROOM_TOKEN_SECRET is required when buyer tokens come from BUYER_JWKS_URL');
  return '';
}

/** The bot check's default cost (BOT_CHECK_MAX_NUMBER): the largest counter a solver may have to reach. */
export const DEFAULT_BOT_CHECK_MAX_NUMBER = Number(variable('BOT_CHECK_MAX_NUMBER').default);

/** BOT_CHECK_SECRET: signs the bot check's challenges; every API process needs the same one. */
function botCheckSecret(r: Reader): string {
  const secret = r.need('BOT_CHECK_SECRET', 'the HMAC secret that signs bot-check challenges');
  if (secret && secret.length < MIN_SECRET_LENGTH) {
    r.problems.push(`BOT_CHECK_SECRET must be at least ${MIN_SECRET_LENGTH} characters`);
  }
  return secret;
}

/** A switch: `1` on, `0` off, unset its default; anything else is a problem named. */
function zeroOrOne(r: Reader, name: string, unset: '0' | '1'): boolean {
  const raw = r.raw(name) ?? unset;
  if (raw !== '0' && raw !== '1') r.problems.push(`${name} must be 0 or 1, got "${raw}"`);
  return raw === '1';
}

/**
 * DEV_SIGN_IN=1: anyone may become any buyer by typing a name, so it is asked for by name (npm start
 * does), and refused where it would be a hole: beside a live key, or without the HS256 secret it signs with.
 */
function devSignIn(r: Reader, buyers: BuyerTokenConfig): boolean {
  if (!zeroOrOne(r, 'DEV_SIGN_IN', '0')) return false;
  if (isLiveKey(r.env.STRIPE_SECRET_KEY ?? '')) {
    r.problems.push('DEV_SIGN_IN=1 (anyone signs in as any buyer) cannot run with a live STRIPE_SECRET_KEY');
  }
  if (!buyers.secret || buyers.jwksUrl) {
    r.problems.push('DEV_SIGN_IN=1 needs BUYER_TOKEN_SECRET (the HS256 secret it signs with) and no BUYER_JWKS_URL');
  }
  return true;
}

export function loadApiConfig(env: Env): ApiConfig {
  const r = new Reader(env, 'api');
  const buyers = buyerTokens(r);
  const host = r.text('HOST');
  return r.done({
    ...common(r),
    ...serviceStart(r),
    ...stripe(r),
    stripeWebhookSecret: r.need('STRIPE_WEBHOOK_SECRET', 'whsec_ secret that signs Stripe webhooks'),
    port: r.int('PORT'),
    host,
    adminToken: operatorToken(r, 'ADMIN_TOKEN', 'bearer token for the catalogue routes'),
    supportToken: operatorToken(r, 'SUPPORT_TOKEN', 'bearer token for support refunds'),
    metricsToken: metricsToken(r, host),
    shutdownGraceMs: r.int('SHUTDOWN_GRACE_MS'),
    purchaseTimeoutMs: r.int('PURCHASE_TIMEOUT_MS'),
    expireAnswerGraceMs: r.int('EXPIRE_ANSWER_GRACE_MS'),
    gateResyncMs: r.int('GATE_RESYNC_MS'),
    buyerTokens: buyers,
    roomTokenSecret: roomTokenSecret(r, buyers),
    roomTicketsSealed: zeroOrOne(r, 'ROOM_TICKETS_SEALED', '1'),
    roomRefreshMs: r.int('ROOM_REFRESH_MS'),
    roomAdmitTickMs: r.int('ROOM_ADMIT_TICK_MS'),
    roomMaxPollSeconds: r.int('ROOM_MAX_POLL_SECONDS'),
    botCheck: {
      secret: botCheckSecret(r),
      maxNumber: r.int('BOT_CHECK_MAX_NUMBER'),
    },
    rateLimits: {
      perBuyerPerMinute: r.int('RATE_LIMIT_PER_BUYER_PER_MINUTE'),
      perIpPerSecond: r.int('RATE_LIMIT_PER_IP_PER_SECOND'),
      pagesPerIpPerSecond: r.int('RATE_LIMIT_PAGES_PER_IP_PER_SECOND'),
      challengesPerIpPerSecond: r.int('RATE_LIMIT_CHALLENGES_PER_IP_PER_SECOND'),
    },
    trustedProxies: trustedProxies(r),
    catalogueCacheMs: r.int('CATALOGUE_CACHE_MS'),
    pool: poolTimeouts(r),
    temporalCallTimeoutMs: r.int('TEMPORAL_CALL_TIMEOUT_MS'),
    temporalConnectTimeoutMs: r.int('TEMPORAL_CONNECT_TIMEOUT_MS'),
    publicUrl: publicUrl(r),
    devSignIn: devSignIn(r, buyers),
  });
}

export function loadWorkerConfig(env: Env): WorkerConfig {
  const r = new Reader(env, 'worker');
  return r.done({
    ...common(r),
    ...serviceStart(r),
    ...stripe(r),
    ...checkoutUrls(r),
    sweepIntervalMs: r.int('SWEEP_INTERVAL_MS'),
    pool: workerPool(r),
    maxActivities: r.int('WORKER_MAX_ACTIVITIES'),
    maxLocalActivities: r.int('WORKER_MAX_LOCAL_ACTIVITIES'),
    maxStripeCalls: r.int('WORKER_MAX_STRIPE_CALLS'),
    metrics: { port: r.int('WORKER_METRICS_PORT'), host: r.text('WORKER_METRICS_HOST') },
    workflowBundlePath: bundlePath(r),
    deployment: workerDeployment(r),
  });
}

/** WORKFLOW_BUNDLE_PATH: a file `bundleWorkflows` wrote (npm test builds one for every worker it starts). */
function bundlePath(r: Reader): string | undefined {
  const file = r.raw('WORKFLOW_BUNDLE_PATH');
  if (file && !existsSync(file)) r.problems.push(`WORKFLOW_BUNDLE_PATH=${file} does not exist`);
  return file;
}

/** PUBLIC_URL and the Checkout return URLs, by default the buyer's purchase page under it. */
function checkoutUrls(r: Reader): Pick<WorkerConfig, 'publicUrl' | 'checkoutSuccessUrl' | 'checkoutCancelUrl'> {
  const base = publicUrl(r);
  const page = `${base}/purchases/${PURCHASE_ID_PLACEHOLDER}`;
  return {
    publicUrl: base,
    checkoutSuccessUrl: checkoutUrl(r, 'CHECKOUT_SUCCESS_URL', `${page}?result=paid`),
    checkoutCancelUrl: checkoutUrl(r, 'CHECKOUT_CANCEL_URL', `${page}?result=cancel`),
  };
}

/**
 * The worker's pool timeouts: waiting for a connection plus the statement (plus the client's margin)
 * must end before the activity's attempt times out, or Temporal retries it while the first still runs.
 */
function workerPool(r: Reader): PoolTimeouts {
  const pool = poolTimeouts(r);
  if (pool.connectTimeoutMs + pool.statementTimeoutMs + QUERY_TIMEOUT_MARGIN_MS >= ACTIVITY_TIMEOUT_MS) {
    r.problems.push(
      `PG_CONNECT_TIMEOUT_MS + PG_STATEMENT_TIMEOUT_MS must stay below ${ACTIVITY_TIMEOUT_MS - QUERY_TIMEOUT_MARGIN_MS} ms (activities time out after ${ACTIVITY_TIMEOUT_MS} ms)`,
    );
  }
  return pool;
}

/** What the operator CLIs add: where their links into the Temporal Web UI point. */
export interface CliExtras {
  temporalUiUrl: string;
  /** How long the first connection to Temporal may take before the CLI stops, naming TEMPORAL_ADDRESS. */
  temporalConnectTimeoutMs: number;
}

function cliExtras(r: Reader): CliExtras {
  const temporalUiUrl = r.text('TEMPORAL_UI_URL');
  if (!isHttpUrl(temporalUiUrl)) {
    r.problems.push(`TEMPORAL_UI_URL must be an http(s) URL, got "${temporalUiUrl}"`);
  }
  return { temporalUiUrl, temporalConnectTimeoutMs: r.int('TEMPORAL_CONNECT_TIMEOUT_MS') };
}

/** The operator CLIs: Postgres always, Temporal settings (connected only by the CLIs that need it). */
export function loadCliConfig(env: Env): CommonConfig & CliExtras {
  const r = new Reader(env, 'cli');
  return r.done({ ...common(r), ...cliExtras(r) });
}

/** The CLIs that can work without Postgres (`sagas stuck` adds database checks when it has one). */
export function loadTemporalCliConfig(
  env: Env,
): Omit<CommonConfig, 'databaseUrl'> & CliExtras & { databaseUrl?: string } {
  const r = new Reader(env, 'cli');
  const given = r.raw('DATABASE_URL');
  const databaseUrl = given ? r.postgresUrl('DATABASE_URL', 'optional here: the database checks') : undefined;
  return r.done({ ...temporal(r), ...cliExtras(r), databaseUrl });
}
