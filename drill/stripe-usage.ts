// Stripe's side of a drop, through the payments emulator's rate limiter (`/_emulator/rate-limits`):
// the limit in force (`--stripe-rate N` sets it), the calls the service made during the drop and
// those refused with 429, per endpoint; the sessions opened for the SKU against the checkouts the
// buyers got; and Stripe's floor, the time the limit alone needs to open one session per unit.
import type Stripe from 'stripe';
import type { DrillHttp } from './http';

export interface EndpointCounts {
  endpoint: string;
  served: number;
  limited: number;
}

export interface RateLimits {
  settings: { accountPerSecond: number; endpointPerSecond: number };
  endpoints: EndpointCounts[];
}

export interface StripeFigures {
  accountPerSecond: number;
  endpointPerSecond: number;
  /** units ÷ the session endpoint's effective limit; null when Stripe is not limited. */
  floorSeconds: number | null;
  /** Seconds after the opening of the last checkout a buyer got. */
  lastCheckoutSeconds: number | null;
  sessionsOpened: number;
  checkouts: number;
  /** Calls served and refused (429) during the drop, busiest endpoint first. */
  endpoints: EndpointCounts[];
  served: number;
  limited: number;
  callsPerSale: number | null;
  callsPerSaga: number | null;
}

/** `--stripe-rate N`: the account's and each endpoint's limit, N a second (0: none). */
export async function setStripeRate(emulator: DrillHttp, perSecond: number): Promise<void> {
  const r = await emulator.call('POST', '/_emulator/rate-limits', 'emulator /_emulator/rate-limits', {
    body: { accountPerSecond: perSecond, endpointPerSecond: perSecond },
  });
  if (r.status !== 200) throw new Error(`the emulator refused --stripe-rate ${perSecond}: ${r.status}`);
}

/**
 * Webhook deliveries in flight at once. Stripe sends events in parallel and in no set order; the
 * emulator sends one at a time unless told, and then one slow answer under load holds back every
 * paid buyer's confirmation behind it (600 buyers on the cluster: 340 paid, 142 seen confirmed 95 s in).
 */
export const WEBHOOKS_IN_PARALLEL = 16;

/** Has the emulator send webhooks as Stripe does: `WEBHOOKS_IN_PARALLEL` at once. */
export async function deliverWebhooksInParallel(emulator: DrillHttp): Promise<void> {
  const r = await emulator.call('POST', '/_emulator/webhooks', 'emulator /_emulator/webhooks', {
    body: { parallel: WEBHOOKS_IN_PARALLEL },
  });
  if (r.status !== 200) throw new Error(`the emulator refused parallel webhooks: ${r.status}`);
}

/** The limiter's counts so far; undefined for an emulator that has none (an older one). */
export async function readRateLimits(emulator: DrillHttp): Promise<RateLimits | undefined> {
  try {
    const r = await emulator.call('GET', '/_emulator/rate-limits', 'emulator /_emulator/rate-limits');
    return r.status === 200 ? (r.body as unknown as RateLimits) : undefined;
  } catch {
    return undefined;
  }
}

export async function sessionsOpened(stripe: Stripe, sku: string): Promise<number> {
  let n = 0;
  for await (const s of stripe.checkout.sessions.list({ limit: 100 })) if (s.metadata?.sku === sku) n++;
  return n;
}

export function stripeFigures(o: {
  before: RateLimits;
  after: RateLimits;
  units: number;
  sales: number;
  sagas: number;
  checkouts: number;
  sessionsOpened: number;
  lastCheckoutMs: number | null;
}): StripeFigures {
  const start = new Map(o.before.endpoints.map((e) => [e.endpoint, e]));
  const endpoints = o.after.endpoints
    .map((e) => ({
      endpoint: e.endpoint,
      served: e.served - (start.get(e.endpoint)?.served ?? 0),
      limited: e.limited - (start.get(e.endpoint)?.limited ?? 0),
    }))
    .filter((e) => e.served + e.limited > 0);
  const { accountPerSecond, endpointPerSecond } = o.after.settings;
  const limits = [accountPerSecond, endpointPerSecond].filter((n) => n > 0);
  const served = endpoints.reduce((n, e) => n + e.served, 0);
  const per = (d: number) => (d > 0 ? Math.round((served / d) * 100) / 100 : null);
  return {
    accountPerSecond,
    endpointPerSecond,
    floorSeconds: limits.length ? Math.round((o.units / Math.min(...limits)) * 10) / 10 : null,
    lastCheckoutSeconds: o.lastCheckoutMs === null ? null : Math.round(o.lastCheckoutMs / 100) / 10,
    sessionsOpened: o.sessionsOpened,
    checkouts: o.checkouts,
    endpoints,
    served,
    limited: endpoints.reduce((n, e) => n + e.limited, 0),
    callsPerSale: per(o.sales),
    callsPerSaga: per(o.sagas),
  };
}
