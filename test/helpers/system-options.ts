import type { Logger } from '../../config/log';
import type { BotCheckOptions } from '../../api/bot-check';
import type { RateLimitConfig } from '../../api/rate-limits';
import type { RateLimitSettings } from '@flash-sale/stripe-emulator';

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
