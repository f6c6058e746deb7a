import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import type pg from 'pg';
import { reconcile } from '../store/reconcile';
import { isFinal, type PurchaseStatus } from '../vocabulary';
import { countBy, percentile, type Answer, type Phase } from './crowd-report';
import { parseJson, type HttpClient } from './http-client';
import { sessionIdOfCheckoutUrl } from '@flash-sale/stripe-emulator';

/**
 * `bench:crowd --stripe-rate N`: the drop against the payments emulator limiting like Stripe at N
 * requests a second, the deployment's budget at N too (STRIPE_MAX_REQUESTS_PER_SECOND, unless
 * --stripe-budget says otherwise). Buyers behave as the contract says: a 503 is tried again after its
 * Retry-After (with a new key when `retryWithNewKey`), a 202 is followed until its checkout URL shows
 * (beside the crowd: the next buyer's request does not wait for it).
 * One winner in PAYING_SHARE pays as soon as its checkout is open, and the time until its purchase
 * reads confirmed is measured. Prints Stripe's floor (units ÷ N), the last checkout's time, 429s by
 * endpoint, sessions opened against checkouts, 503s, and the confirmations' latency.
 */

/** One winner in this many pays during the drop. */
const PAYING_SHARE = 5;
const POLL_MS = 200;
/** How long a 202 is followed before the buyer gives up on it (counted, not hidden). */
const FOLLOW_TIMEOUT_MS = 180_000;

export interface StripeDropOptions {
  client: HttpClient;
  db?: pg.Pool;
  emulatorUrl: string;
  sku: string;
  units: number;
  tokens: string[];
  concurrency: number;
  stripeRate: number;
  stripeBudget: number;
  drive: (
    name: string,
    count: number,
    concurrency: number,
    once: (n: number) => Promise<Omit<Answer, 'ms'>>,
  ) => Promise<Phase>;
}

interface RateReport {
  limited: number;
  endpoints: { endpoint: string; served: number; limited: number }[];
}

export interface StripeDrop {
  crowd: Phase;
  checkouts: number;
  /** Winners whose purchase never showed a checkout URL: the status it ended with. */
  withoutCheckout: string[];
  lastCheckoutMs: number;
  answered503: number;
  newKeys: number;
  answered202: number;
  confirmMs: number[];
  /** When each winner was told, in ms from the crowd's start, by its answer (201 or 202). */
  toldMs: Record<'201' | '202', number[]>;
  rateLimits: RateReport;
  sessionsOpened: number;
  /** When the drop's first and last sessions were created, in seconds from the first buyer (whole seconds). */
  sessionSpan: [number, number];
}

/** The creation times (epoch seconds) of every session of `sku` on the emulator, oldest first. */
async function sessionTimes(emulatorUrl: string, sku: string): Promise<number[]> {
  const times: number[] = [];
  let after: string | undefined;
  for (;;) {
    const q = `limit=100${after ? `&starting_after=${after}` : ''}`;
    const r = await fetch(`${emulatorUrl}/v1/checkout/sessions?${q}`, {
      headers: { authorization: 'Bearer sk_test_bench' },
    });
    // The bench's reads count against the emulator's limit like the service's calls: wait its turn.
    if (r.status === 429) {
      await sleep(1_000);
      continue;
    }
    const page = (await r.json()) as {
      data: { id: string; created: number; metadata?: Record<string, string> }[];
      has_more: boolean;
    };
    for (const s of page.data) if (s.metadata?.sku === sku) times.push(s.created);
    if (!page.has_more || page.data.length === 0) break;
    after = page.data[page.data.length - 1].id;
  }
  return times.sort((a, b) => a - b);
}

export async function stripeDrop(o: StripeDropOptions): Promise<StripeDrop> {
  await fetch(`${o.emulatorUrl}/_emulator/rate-limits`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ resetCounts: true }),
  });
  const t0 = performance.now();
  const startedAt = Date.now() / 1000;
  let checkouts = 0;
  let lastCheckoutMs = NaN;
  let answered503 = 0;
  let newKeys = 0;
  let answered202 = 0;
  const confirmMs: number[] = [];
  const toldMs: StripeDrop['toldMs'] = { '201': [], '202': [] };
  const payments: Promise<void>[] = [];

  const follow = async (purchaseId: string, token: string): Promise<Record<string, unknown>> => {
    const until = performance.now() + FOLLOW_TIMEOUT_MS;
    for (;;) {
      await sleep(POLL_MS);
      const r = await o.client.json('GET', `/v1/purchases/${purchaseId}`, { authorization: `Bearer ${token}` });
      if (r.status === 200 && (typeof r.body.checkoutUrl === 'string' || isFinal(r.body.status as PurchaseStatus)))
        return r.body;
      if (performance.now() > until) return r.body;
    }
  };
  const pay = async (purchaseId: string, checkoutUrl: string): Promise<void> => {
    const session = sessionIdOfCheckoutUrl(checkoutUrl);
    const paidAt = performance.now();
    const r = await fetch(`${o.emulatorUrl}/_emulator/sessions/${session}/pay`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ outcome: 'succeeded' }),
    });
    if (r.status !== 200 || !o.db) return;
    for (;;) {
      const { rows } = await o.db.query<{ status: string }>('SELECT status FROM purchases WHERE purchase_id = $1', [
        purchaseId,
      ]);
      if (rows[0] && ['confirmed', 'late_confirmed', 'refunded'].includes(rows[0].status)) break;
      if (performance.now() - paidAt > 60_000) break;
      await sleep(50);
    }
    confirmMs.push(performance.now() - paidAt);
  };

  const withoutCheckout: string[] = [];
  const followers: Promise<void>[] = [];
  const throughCheckout = async (purchaseId: string, token: string, answer: Record<string, unknown>) => {
    const seen = typeof answer.checkoutUrl === 'string' ? answer : await follow(purchaseId, token);
    if (typeof seen.checkoutUrl !== 'string') {
      withoutCheckout.push(String(seen.status));
      return;
    }
    checkouts++;
    lastCheckoutMs = Math.max(Number.isNaN(lastCheckoutMs) ? 0 : lastCheckoutMs, performance.now() - t0);
    if (checkouts % PAYING_SHARE === 0) payments.push(pay(purchaseId, seen.checkoutUrl));
  };

  const crowd = await o.drive(`crowd at Stripe ${o.stripeRate}/s`, o.tokens.length, o.concurrency, async (n) => {
    const token = o.tokens[n];
    let key = randomUUID();
    for (;;) {
      const r = await o.client.send(
        'POST',
        '/v1/purchases',
        { 'content-type': 'application/json', 'idempotency-key': key, authorization: `Bearer ${token}` },
        JSON.stringify({ sku: o.sku }),
      );
      const body = parseJson(r.body);
      if (r.status === 503) {
        answered503++;
        if (body.retryWithNewKey === true) {
          newKeys++;
          key = randomUUID();
        }
        // The API's Retry-After: 5 s for a purchase that failed for good (a new key), 2 s when busy.
        await sleep(body.retryWithNewKey === true ? 5_000 : 2_000);
        continue;
      }
      if (r.status === 409) return { cls: 'sold-out', final: body.final };
      if (r.status !== 201 && r.status !== 202) return { cls: `${r.status} ${JSON.stringify(body.type ?? '')}` };
      if (r.status === 202) answered202++;
      toldMs[r.status === 201 ? '201' : '202'].push(performance.now() - t0);
      const purchaseId = String(body.purchaseId);
      // Followed beside the crowd, as a buyer's own page would: the crowd's next buyer does not wait for it.
      followers.push(throughCheckout(purchaseId, token, body));
      return { cls: 'winner', purchaseId };
    }
  });
  await Promise.all(followers);
  await Promise.all(payments);
  const rateLimits = (await (await fetch(`${o.emulatorUrl}/_emulator/rate-limits`)).json()) as RateReport;
  const sessionsOpened = rateLimits.endpoints.find((e) => e.endpoint === 'POST /v1/checkout/sessions')?.served ?? 0;
  const times = await sessionTimes(o.emulatorUrl, o.sku);
  return {
    sessionSpan: times.length ? [times[0] - startedAt, times[times.length - 1] - startedAt] : [NaN, NaN],
    crowd,
    checkouts,
    withoutCheckout,
    lastCheckoutMs,
    answered503,
    newKeys,
    answered202,
    confirmMs,
    toldMs,
    rateLimits,
    sessionsOpened,
  };
}

/** Runs the drop and prints its report beside the baseline; exit code 1 when the ledger does not reconcile. */
export async function stripeBench(o: StripeDropOptions & { describe: string; healthz: Phase }): Promise<number> {
  const drop = await stripeDrop(o);
  const diffs = o.db ? await reconcile(o.db, o.sku) : [];
  const report = stripeDropReport(drop, o);
  const limited = o.stripeRate > 0;
  console.log(
    [
      `bench:crowd --stripe-rate ${o.stripeRate}: ${o.tokens.length} buyers for ${o.units} units, ${o.concurrency} in flight (${o.describe})`,
      `  baseline GET /healthz ${(o.healthz.answers.length / o.healthz.seconds).toFixed(0)}/s; the drop's buyers done in ${drop.crowd.seconds.toFixed(1)} s (${(drop.crowd.answers.length / drop.crowd.seconds).toFixed(0)} buyers/s)`,
      ...(limited ? report.lines : report.lines.slice(2)),
      `  ledger reconciles: ${diffs.length === 0 ? 'yes' : JSON.stringify(diffs)}`,
      ...(limited ? report.checks.map(([what, ok]) => `  ${ok ? 'ok  ' : 'MISS'} ${what}`) : []),
    ].join('\n'),
  );
  return diffs.length === 0 ? 0 : 1;
}

/** The report's lines for the drop, with the issue's targets beside the figures. */
export function stripeDropReport(d: StripeDrop, o: Pick<StripeDropOptions, 'units' | 'stripeRate' | 'stripeBudget'>) {
  const floorS = o.units / o.stripeRate;
  const lastS = d.lastCheckoutMs / 1000;
  const calls = d.rateLimits.endpoints.reduce((n, e) => n + e.served + e.limited, 0);
  const limitedShare = calls ? d.rateLimits.limited / calls : 0;
  const sorted = (xs: number[]) => [...xs].sort((a, b) => a - b);
  const confirms = sorted(d.confirmMs);
  const told = sorted([...d.toldMs['201'], ...d.toldMs['202']]);
  const lastTold = told.length ? told[told.length - 1] : 0;
  const toldBy = (status: '201' | '202') => {
    const xs = sorted(d.toldMs[status]);
    return `${status} ${xs.length}${xs.length ? ` (p50 ${percentile(xs, 50).toFixed(0)}, last ${xs[xs.length - 1].toFixed(0)})` : ''}`;
  };
  const lines = [
    `Stripe at ${o.stripeRate}/s, budget ${o.stripeBudget}/s: floor ${floorS.toFixed(1)} s (units ÷ rate)`,
    `  last checkout at ${lastS.toFixed(1)} s = ${(lastS / floorS).toFixed(2)}x the floor (target <= 1.10x)`,
    `  Stripe calls ${calls}, answered 429: ${d.rateLimits.limited} (${(limitedShare * 100).toFixed(1)} %, target <= 2 %)`,
    ...d.rateLimits.endpoints.map((e) => `    ${e.endpoint.padEnd(40)} served ${e.served}, 429 ${e.limited}`),
    `  sessions opened ${d.sessionsOpened} for ${d.checkouts} checkouts (target <= checkouts + 1 %), created from ${d.sessionSpan[0].toFixed(0)} s to ${d.sessionSpan[1].toFixed(0)} s`,
    `  buyers by outcome: ${[...countBy(d.crowd.answers, (a) => a.cls)].map(([k, v]) => `${k} ${v}`).join(', ')}; winners without a checkout: ${d.withoutCheckout.length}${d.withoutCheckout.length ? ` (${[...countBy(d.withoutCheckout, (x) => x)].map(([k, v]) => `${k} ${v}`).join(', ')})` : ''}`,
    `  answers of 503 to buyers: ${d.answered503} (${d.newKeys} with retryWithNewKey; target 0); 202 while the session waited: ${d.answered202}`,
    `  winners told (201 or 202) after the crowd's start: p50 ${percentile(told, 50).toFixed(0)} ms, p99 ${percentile(told, 99).toFixed(0)} ms, last ${lastTold.toFixed(0)} ms (target: every one within 3000 ms); ${toldBy('201')}, ${toldBy('202')}`,
    `  payments during the drop: ${confirms.length}, confirmed p50 ${percentile(confirms, 50).toFixed(0)} ms, p99 ${percentile(confirms, 99).toFixed(0)} ms (target p99 <= 2000 ms)`,
  ];
  const checks: Array<[string, boolean]> = [
    ['last checkout within 1.1x of the floor', lastS <= floorS * 1.1],
    ['at most 2 % of Stripe calls answered 429', limitedShare <= 0.02],
    ['every winner reached its checkout', d.withoutCheckout.length === 0],
    ['sessions opened at most checkouts + 1 %', d.sessionsOpened <= Math.ceil(d.checkouts * 1.01)],
    ['no 503 to a buyer', d.answered503 === 0],
    ['every winner told within 3 s of the crowd’s start', lastTold <= 3000],
    ['payments confirmed within 2 s (p99)', confirms.length === 0 || percentile(confirms, 99) <= 2000],
  ];
  return { lines, checks };
}
