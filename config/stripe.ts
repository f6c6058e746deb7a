import { isHttpUrl, Reader, type Env } from './reader';
import { isLiveKey } from './stripe-key';

export { isLiveKey } from './stripe-key';

// Stripe's part of the configuration: the key and where it points, and the deployment's budget.

export interface StripeConfig {
  stripeSecretKey: string;
  /** Set for the local payments emulator (`http://127.0.0.1:12111`); unset means api.stripe.com. */
  stripeApiUrl?: string;
  /**
   * The deployment's Stripe budget, requests a second for every process together
   * (STRIPE_MAX_REQUESTS_PER_SECOND): the Stripe task queue's rate limit, for every Stripe call
   * (sessions, expiries, refunds), and the ceiling of the session budget. Default 80 % of Stripe's
   * limit for the key's mode (live 100/s, sandbox 25/s).
   */
  stripeMaxRequestsPerSecond: number;
  /**
   * New Checkout Sessions a second for the deployment (STRIPE_MAX_SESSIONS_PER_SECOND): Stripe limits
   * each endpoint to 25/s in live mode too, so session creation (one endpoint) is held below that by
   * the checkout pace; default 80 % of it (20), never above the budget.
   */
  stripeMaxSessionsPerSecond: number;
}

/**
 * Stripe's account limits (docs.stripe.com/rate-limits), and the share the budget leaves for calls
 * the service does not make (the Dashboard, other integrations of the account, Stripe's own slack).
 */
export const STRIPE_ACCOUNT_LIMITS = { live: 100, sandbox: 25, perEndpoint: 25, headroom: 0.2 } as const;

/** Development against the payments emulator (`STRIPE_EMULATOR=1`): short dev tokens and a local Stripe are allowed. */
export function isDevelopment(env: Env): boolean {
  return env.STRIPE_EMULATOR === '1';
}

const REAL_STRIPE = /^https:\/\/api\.stripe\.com\/?$/;
export function stripe(r: Reader): StripeConfig {
  const stripeApiUrl = r.raw('STRIPE_API_URL');
  if (stripeApiUrl && !isHttpUrl(stripeApiUrl, /^https?:\/\/[^/]+\/?$/)) {
    r.problems.push(`STRIPE_API_URL must look like http://host:port, got "${stripeApiUrl}"`);
  } else if (stripeApiUrl && !REAL_STRIPE.test(stripeApiUrl) && !isDevelopment(r.env)) {
    r.problems.push(
      `STRIPE_API_URL points at ${stripeApiUrl}, not Stripe: set STRIPE_EMULATOR=1 to use the payments emulator (development only)`,
    );
  }
  const stripeSecretKey = r.need(
    'STRIPE_SECRET_KEY',
    'sk_live_/sk_test_ key, or any value with STRIPE_API_URL for the emulator',
  );
  if (isLiveKey(stripeSecretKey) && isDevelopment(r.env)) {
    r.problems.push('STRIPE_EMULATOR=1 (development) cannot run with a live Stripe key');
  }
  const limit = isLiveKey(stripeSecretKey) ? STRIPE_ACCOUNT_LIMITS.live : STRIPE_ACCOUNT_LIMITS.sandbox;
  const stripeMaxRequestsPerSecond = r.int(
    'STRIPE_MAX_REQUESTS_PER_SECOND',
    Math.floor(limit * (1 - STRIPE_ACCOUNT_LIMITS.headroom)),
  );
  const sessions = r.int(
    'STRIPE_MAX_SESSIONS_PER_SECOND',
    Math.floor(STRIPE_ACCOUNT_LIMITS.perEndpoint * (1 - STRIPE_ACCOUNT_LIMITS.headroom)),
  );
  const stripeMaxSessionsPerSecond = Math.min(sessions, stripeMaxRequestsPerSecond);
  return { stripeSecretKey, stripeApiUrl, stripeMaxRequestsPerSecond, stripeMaxSessionsPerSecond };
}
