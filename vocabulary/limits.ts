// The numbers more than one layer states, each named once: a product's hold (its default and its
// bounds), the limits Stripe sets on what the service asks of it, and the store activities' timeout.
// Zero imports, like the rest of the vocabulary: the store, the API's schemas, the workflows, the
// activities, the config and the drill read them from here. The migrations keep the values they
// were written with (001: `hold_seconds DEFAULT 600`; 014: `hold_grace_seconds DEFAULT 30`, at
// most 3600), and the payments emulator keeps its own copy of Stripe's: it emulates Stripe.

const MINUTE = 60;
const HOUR = 60 * MINUTE;

/** Stripe accepts a Checkout Session's `expires_at` from this long after its creation… */
export const STRIPE_MIN_SESSION_SECONDS = 30 * MINUTE;
/** …to this long after it. */
export const STRIPE_MAX_SESSION_SECONDS = 24 * HOUR;

/** Stripe's largest charge, in the smallest unit of the currency (USD $999,999.99). */
export const STRIPE_MAX_CHARGE_CENTS = 99_999_999;

/**
 * Stripe's smallest charge by currency, in the unit its API counts (cents; yen for JPY; HUF in
 * fillér), per docs.stripe.com/currencies#minimum-and-maximum-charge-amounts (for an account that
 * settles in that currency). Stripe refuses a Checkout Session below it; a currency not listed here
 * is not checked.
 */
export const STRIPE_MIN_CHARGE: Readonly<Record<string, number>> = {
  usd: 50,
  aed: 200,
  aud: 50,
  bgn: 100,
  brl: 50,
  cad: 50,
  chf: 50,
  czk: 1500,
  dkk: 250,
  eur: 50,
  gbp: 30,
  hkd: 400,
  huf: 17500,
  inr: 50,
  jpy: 50,
  mxn: 1000,
  myr: 200,
  nok: 300,
  nzd: 50,
  pln: 200,
  ron: 200,
  sek: 300,
  sgd: 50,
  thb: 1000,
};

/** A product's hold when its terms name none (POST /v1/products `holdSeconds`). */
export const DEFAULT_HOLD_SECONDS = 10 * MINUTE;
/**
 * The longest hold a product may have. Stripe's sessions live at most STRIPE_MAX_SESSION_SECONDS;
 * a hold must end before its session can no longer be expired.
 */
export const MAX_HOLD_SECONDS = 23 * HOUR;

/** A hold's unit stays its buyer's this long past its lapse, unless its saga gives it back (`holdGraceSeconds`). */
export const DEFAULT_HOLD_GRACE_SECONDS = 30;
/** The longest grace a product may have. */
export const MAX_HOLD_GRACE_SECONDS = HOUR;

/**
 * How long one attempt of a store activity (Postgres, bookkeeping; the hold) may run before Temporal
 * retries it (workflows/proxies.ts): the worker's Postgres timeouts must end before it (config/).
 */
export const ACTIVITY_TIMEOUT_MS = 10_000;

/**
 * How long one attempt of a Stripe activity may run before Temporal retries it (workflows/proxies.ts):
 * stripe-node gives a call up first (config/clients.ts), and a stopping worker waits longer for it.
 */
export const STRIPE_CALL_TIMEOUT_MS = 20_000;
