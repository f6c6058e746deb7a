import type { Logger } from '../../config/log';
import type { BotCheckOptions } from '../../api/bot-check';
import type { RateLimitConfig } from '../../api/rate-limits';
import type { Client } from '@temporalio/client';
import type { WorkerDeploymentVersion } from '@temporalio/common';
import type pg from 'pg';
import type { Emulator, PayControlExtras, RateLimitSettings } from '@flash-sale/stripe-emulator';
import type { ApiDeps } from '../../api/deps';
import type { Admitter } from '../../store/admitter';

/** What a test asks of its system (test/helpers/system.ts `startSystem`); each default is production's or the suite's. */
export interface SystemOptions {
  worker?: boolean;
  retryBaseMs?: number;
  purchaseTimeoutMs?: number;
  gateResyncMs?: number;
  rateLimits?: RateLimitConfig;
  /** The balancers whose X-Forwarded-For the API believes (TRUSTED_PROXIES); default none. */
  trustedProxies?: string[];
  /** How long each API instance keeps the home page's catalogue (CATALOGUE_CACHE_MS); default 1000. */
  catalogueCacheMs?: number;
  /**
   * How old the API's purchases-by-status and dispute counts may get before a scrape of /metrics
   * counts them again (createMetrics' statusMaxAgeMs); default production's 15 s. A test that waits
   * for a gauge to change passes a short one, so it waits for the count, not for its age.
   */
  statusCountMaxAgeMs?: number;
  /** The API's logger (default: silent); a test that reads the access log passes its own. */
  logger?: Logger;
  /** The admitter's tick and each API's room-cache refresh (ROOM_ADMIT_TICK_MS, ROOM_REFRESH_MS). */
  roomTickMs?: number;
  roomRefreshMs?: number;
  /**
   * A database of this file's own on the suite's Postgres (migrated): its waiting rooms are stepped
   * by this file's admitter alone, not by whichever test process holds the shared database's lock.
   */
  ownDatabase?: boolean;
  /** The development sign-in of the buyer's pages (DEV_SIGN_IN=1, as `npm start` runs them); off by default, as in production. */
  devSignIn?: boolean;
  /**
   * The Stripe budget as the API paces checkouts and rooms by it (STRIPE_MAX_REQUESTS_PER_SECOND);
   * the worker's is startWorker's `stripeRequestsPerSecond` (default 20). Default 1000: no pacing
   * to speak of. The pace is one row of the database, shared by every test file on it: a test
   * that sets a slow one uses `ownDatabase`, so no other file's purchases wait behind its line.
   */
  checkoutsPerSecond?: number;
  /** The emulator's rate limits (default: Stripe's sandbox figures, 25/s). */
  emulatorRateLimit?: RateLimitSettings;
  /** The bot check's secret and cost (BOT_CHECK by default). */
  botCheck?: BotCheckOptions;
  /** NOTIFY_* of the worker: with them it delivers buyer notifications (else they wait in their table). */
  notify?: Record<string, string>;
  /**
   * How long after a hold's lapse the webhook keeps its session's expiry from the saga
   * (EXPIRE_ANSWER_GRACE_MS); default the API's, 30 s.
   */
  expireAnswerGraceMs?: number;
}

/** A started system (test/helpers/system.ts `startSystem`): the handles and calls its tests use. */
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
