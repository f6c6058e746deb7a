// The buyers of the chaos test: each one arrives, asks for a unit over HTTP (retrying what a real
// client retries), and then pays, declines, abandons or pays after the hold lapsed, as the buyer,
// through the payments emulator. Every choice comes from a seeded random, so a seed replays the
// same crowd (the timing of the faults around it still varies from run to run).
import { randomUUID } from 'node:crypto';
import { signBuyerToken } from '../../config/buyer-tokens';
import { followToCheckout, sleep } from '../../drill/http';
import { sessionIdOfCheckoutUrl } from '@flash-sale/stripe-emulator';

export const BEHAVIOURS = ['pay', 'decline', 'abandon', 'late'] as const;
export type Behaviour = (typeof BEHAVIOURS)[number];

export interface BuyerResult {
  buyer: string;
  behaviour: Behaviour;
  /** Set when the buyer got a checkout URL. */
  purchaseId?: string;
  sessionId?: string;
  /** POSTs made, and what the last unsuccessful one answered. */
  posts: number;
  lost?: string;
  /** How the buyer's payment went through, if it did. */
  paid?: 'card' | 'bank_debit' | 'after_decline' | 'late' | 'late_raced_expiry';
  declines: number;
  /** Pay calls the emulator refused (the session was already expired or complete). */
  refusedPays: number;
  /** When the checkout URL arrived, when its hold lapses, and when the session was completed (ms). */
  answeredAt?: number;
  holdEnd?: number;
  paidAt?: number;
}

export interface CrowdOptions {
  apiUrl: string;
  emulatorUrl: string;
  sku: string;
  holdSeconds: number;
  /** Buyers arrive uniformly over this window. */
  arrivalMs: number;
  /** A buyer still without an answer by then gives up. */
  giveUpAt: number;
  /** Signs each buyer's token (the merchant's login, in real life). */
  buyerTokenSecret: string;
}

export { seededRandom } from '@flash-sale/stripe-emulator';

const MAX_SOLD_OUT_TRIES = 3;
/** 429s a buyer waits out (its `Retry-After`, same key) before giving up: the crowd shares one address here. */
const MAX_RATE_LIMITED_TRIES = 3;

async function call(method: string, url: string, body?: unknown, headers: Record<string, string> = {}) {
  const res = await fetch(url, {
    method,
    headers: { 'content-type': 'application/json', ...headers },
    body: body === undefined ? undefined : JSON.stringify(body),
    signal: AbortSignal.timeout(30_000),
  });
  const text = await res.text();
  let parsed: any = text;
  try {
    parsed = JSON.parse(text);
  } catch {
    // not JSON
  }
  return { status: res.status, body: parsed, headers: res.headers };
}

/** One buyer, start to end. `rand` is this buyer's own seeded random. */
export async function runBuyer(o: CrowdOptions, index: number, rand: () => number): Promise<BuyerResult> {
  const between = (lo: number, hi: number) => lo + rand() * (hi - lo);
  const roll = rand();
  const behaviour: Behaviour = roll < 0.4 ? 'pay' : roll < 0.6 ? 'decline' : roll < 0.8 ? 'abandon' : 'late';
  const r: BuyerResult = { buyer: `chaos-${index}`, behaviour, posts: 0, declines: 0, refusedPays: 0 };
  // Drawn up front, so a buyer's choices do not depend on how many retries the chaos forced.
  const arrival = between(0, o.arrivalMs);
  const think = between(200, (o.holdSeconds * 1000) / 3);
  const bankDebit = rand() < 0.3;
  const declineCount = 1 + Math.floor(rand() * 3);
  const payAfterDecline = rand() < 0.4;
  const lateBy = between(300, 3000);
  await sleep(arrival);

  const authorization = `Bearer ${await signBuyerToken(o.buyerTokenSecret, r.buyer, { ttlSeconds: 600 })}`;
  let key = randomUUID();
  let soldOutTries = 0;
  let rateLimitedTries = 0;
  let checkout: { holdExpiresAt: string } | undefined;
  while (!checkout) {
    if (Date.now() > o.giveUpAt) {
      r.lost = `gave up (${r.lost ?? 'no answer'})`;
      return r;
    }
    r.posts++;
    let a: Awaited<ReturnType<typeof call>>;
    try {
      a = await call(
        'POST',
        `${o.apiUrl}/v1/purchases`,
        { sku: o.sku, buyerId: r.buyer },
        { 'idempotency-key': key, authorization },
      );
    } catch (err) {
      r.lost = `network: ${(err as Error).message}`;
      await sleep(500);
      continue; // same key: the purchase, if any, is joined
    }
    if (a.status === 202 && a.body.purchaseId) {
      const location = `${o.apiUrl}/v1/purchases/${a.body.purchaseId}`;
      a = {
        ...a,
        body: (await followToCheckout(() => call('GET', location, undefined, { authorization }), a.body, {
          jitterMs: () => 0,
          givenUp: () => Date.now() > o.giveUpAt,
        })) ?? { status: 'no session before giving up' },
      };
    }
    if ((a.status === 201 || a.status === 200 || a.status === 202) && a.body.checkoutUrl) {
      r.purchaseId = a.body.purchaseId;
      r.sessionId = sessionIdOfCheckoutUrl(a.body.checkoutUrl);
      checkout = a.body;
      r.lost = undefined;
      r.answeredAt = Date.now();
    } else if (a.status === 409 && a.body.type === 'sold-out') {
      r.lost = a.body.final ? 'sold out' : 'sold out, retry later';
      if (a.body.final || ++soldOutTries >= MAX_SOLD_OUT_TRIES) return r;
      const retryAt = a.body.retryAt ? Date.parse(a.body.retryAt) : Date.now() + 1000;
      await sleep(Math.min(retryAt - Date.now(), 4000) + between(0, 500));
      key = randomUUID(); // pressing Buy again is a new purchase
    } else if (a.status === 503) {
      r.lost = `503 ${a.body.detail ?? ''}`;
      if (a.body.retryWithNewKey) key = randomUUID();
      await sleep(Math.min(Number(a.headers.get('retry-after') ?? 1), 3) * 1000);
    } else if (a.status === 429 && ++rateLimitedTries <= MAX_RATE_LIMITED_TRIES) {
      r.lost = `429 ${a.body.detail ?? ''}`;
      await sleep(Math.min(Number(a.headers.get('retry-after') ?? 1), 3) * 1000 + between(0, 500));
    } else if (a.status === 200 || a.status === 201 || a.status === 202) {
      r.lost = `ended before checkout: ${a.body.status}`;
      return r;
    } else {
      r.lost = `${a.status} ${a.body.type ?? ''} ${a.body.detail ?? ''}`.trim();
      if (a.status < 500) return r;
      await sleep(500);
    }
  }

  const pay = async (outcome: string, extra: Record<string, unknown> = {}): Promise<boolean> => {
    for (let attempt = 0; ; attempt++) {
      try {
        const res = await call('POST', `${o.emulatorUrl}/_emulator/sessions/${r.sessionId}/pay`, { outcome, ...extra });
        if (res.status !== 200) r.refusedPays++;
        else if (outcome === 'succeeded' || outcome === 'async_pending') r.paidAt = Date.now();
        return res.status === 200;
      } catch (err) {
        if (attempt >= 3) throw err;
      }
    }
  };
  const holdEnd = Date.parse(checkout.holdExpiresAt);
  r.holdEnd = holdEnd;
  switch (behaviour) {
    case 'pay':
      await sleep(think);
      if (bankDebit) {
        if (await pay('async_pending')) {
          await sleep(between(300, 2000));
          if (await pay('async_succeeded')) r.paid = 'bank_debit';
        }
      } else if (await pay('succeeded')) r.paid = 'card';
      break;
    case 'decline':
      for (let i = 0; i < declineCount; i++) {
        await sleep(between(200, 800));
        if (await pay('declined')) r.declines++;
      }
      if (payAfterDecline && (await pay('succeeded'))) r.paid = 'after_decline';
      break;
    case 'abandon':
      break;
    case 'late':
      await sleep(holdEnd + lateBy - Date.now());
      // The saga may not have closed the session yet (then this is an ordinary late payment);
      // once it has, `force` is the buyer who pressed Pay a moment before the expiry landed.
      if (await pay('succeeded')) r.paid = 'late';
      else if (await pay('succeeded', { force: true })) r.paid = 'late_raced_expiry';
      break;
  }
  return r;
}
