import type { Client } from '@temporalio/client';
import type Stripe from 'stripe';
import type { BuyerVerifier } from '../config/buyer-tokens';
import type { Logger } from '../config/log';
import type { Admissions } from '../store/admission';
import type { Clock } from '../store/clock';
import type { CheckoutWatch } from '../store/checkout-watch';
import type { Db } from '../store/db';
import type { BotCheck } from './bot-check';
import type { CatalogueCache } from './catalogue-view';
import type { Metrics } from './metrics';
import type { WaitingRoom } from './waiting-room';
import type { RateLimits } from './rate-limits';
import type { Lifecycle } from './shutdown';

/** How the buyer's pages identify buyers (api/buyer-session.ts). */
export interface PageOptions {
  /**
   * The HS256 secret the development sign-in (GET/POST /sign-in) signs buyer tokens with; absent,
   * there is no sign-in page and the shop's site hands the token over (docs/operations.md).
   */
  devSignInSecret?: string;
  /** The origin the pages are served at (PUBLIC_URL): forms posted from it pass the CSRF check. */
  publicOrigin?: string;
  /** Mark the buyer cookie `Secure` (PUBLIC_URL is https). */
  secureCookies: boolean;
}

/** Everything the routes use, built by the entry point (api/main.ts) or a test. */
export interface ApiDeps {
  db: Db;
  temporal: Client;
  taskQueue: string;
  admissions: Admissions;
  /**
   * "Now" as Postgres counts it (store/clock.ts): every comparison with a stored instant (an
   * opening, a hold's or an admission's end) and every instant told to a client is by it.
   */
  clock: Clock;
  /** The waiting rooms: join, poll, and the admission a purchase of a product with a room needs. */
  room: WaitingRoom;
  /** The bot check of products with `botCheck`: challenges, and solutions spent once (api/bot-check.ts). */
  botCheck: BotCheck;
  /** Used only to verify webhook signatures. */
  stripe: Stripe;
  webhookSecret: string;
  /** True with a live-mode key (`sk_live_`/`rk_live_`): events of the other mode are refused. */
  livemode: boolean;
  /** Per-buyer and per-IP limits on the purchase routes, per-IP on page reads and challenges; absent: none (tests that do not test them). */
  rateLimits?: RateLimits;
  /**
   * The balancers whose X-Forwarded-For names the client (TRUSTED_PROXIES, api/client-address.ts);
   * absent or empty: the socket's peer is the client.
   */
  trustedProxies?: readonly string[];
  /** Verifies buyer tokens (JWTs whose `sub` is the buyer id). */
  buyers: BuyerVerifier;
  adminToken: string;
  supportToken: string;
  /** The bearer token GET /metrics needs (METRICS_TOKEN); absent or empty: none. */
  metricsToken?: string;
  metrics: Metrics;
  /** The process's shutdown: /readyz answers 503 once it drains, the waits on sagas end once its listener closes. */
  lifecycle: Lifecycle;
  /** The process's logger; within a request, log through `requestLog(ctx)` (api/access-log.ts) instead. */
  logger: Logger;
  /**
   * How long POST /v1/purchases waits for the hold and the Checkout Session: past it, a purchase that
   * holds its unit is answered 202 (its session waits for the Stripe budget), one that does not 503.
   */
  purchaseTimeoutMs: number;
  /**
   * How long after a hold's lapse the webhook keeps its session's expiry from the saga, taking it for
   * the saga's own expire (EXPIRE_ANSWER_GRACE_MS); default 30 s (api/stripe-events.ts).
   */
  expireAnswerGraceMs?: number;
  /** The pace Checkout Sessions open at: the session budget (STRIPE_MAX_SESSIONS_PER_SECOND); default 20 (api/checkout-pace.ts). */
  checkoutsPerSecond?: number;
  /** Where POST /v1/purchases waits for the session once the hold is taken (the purchase record). */
  checkouts: CheckoutWatch;
  /** The home page's catalogue, read at most once a period (CATALOGUE_CACHE_MS) by this process. */
  catalogue: CatalogueCache;
  /** The buyer's HTML pages; absent: no dev sign-in, cookies without `Secure`. */
  pages?: PageOptions;
}
