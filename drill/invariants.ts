// The checks at the end of a drill, from the outside (the buyers' answers, the product's counts over
// HTTP, Stripe's view of the money through the emulator) and, when the drill has them, from the
// inside (the ledger in Postgres, the sagas in Temporal's visibility). Each names what it found.
import type { Client } from '@temporalio/client';
import type Stripe from 'stripe';
import { scanStuckSagas } from '../ops/stuck-sagas';
import type { Db } from '../store/db';
import { reconcile } from '../store/reconcile';
import type { AbuseFigures } from './abuser';
import type { BuyerRecord } from './recorder';
import { ruleCounts } from './rules';

export interface Check {
  name: string;
  /** `skipped`: the drill cannot see what this needs (no database or Temporal address). */
  result: 'pass' | 'fail' | 'skipped';
  detail: string;
}

export interface ProductCounts {
  total: number;
  available: number;
  held: number;
  sold: number;
  oversold: number;
}

export interface CheckInputs {
  sku: string;
  buyers: BuyerRecord[];
  product: ProductCounts;
  stripe: Stripe;
  db?: Db;
  temporal?: Client;
  /** With --abuser: what the abusive address was answered; the crowd's answers are in `crowdAnswers`. */
  abuse?: AbuseFigures;
  /** Every answer the crowd had and how many (`POST /v1/purchases 429 rate-limited`: 3). */
  crowdAnswers?: Array<{ answer: string; count: number }>;
  /** With a deploy: sagas per worker version, from their histories (drill/actions.ts). */
  versions?: { byBuild: Record<string, number>; moved: string[] };
}

const PAID_OUTCOMES = new Set(['confirmed', 'late_confirmed', 'refunded']);
const SOLD_OUTCOMES = new Set(['confirmed', 'late_confirmed']);
/** At most this many examples in a failure's detail. */
const EXAMPLES = 5;

const pass = (name: string, detail: string): Check => ({ name, result: 'pass', detail });
const fail = (name: string, detail: string): Check => ({ name, result: 'fail', detail });
const skipped = (name: string, detail: string): Check => ({ name, result: 'skipped', detail });
const some = (items: string[]) =>
  items.slice(0, EXAMPLES).join('; ') + (items.length > EXAMPLES ? `; … ${items.length - EXAMPLES} more` : '');

export const CHECK_NAMES = {
  outcomes: 'every buyer has one outcome',
  oversold: 'no unit oversold (product counts)',
  ledger: 'the ledger reconciles',
  paid: 'every paid session ended confirmed, late_confirmed or refunded, once',
  refundReasons: 'every refund has a reason',
  failed: 'no saga failed',
  stuck: 'no saga stuck or unsettled',
  bots: 'every bot stopped by a named rule, no human stopped by one',
  addressLimits: 'the abusive address limited, the crowd hardly ever',
  versions: 'every saga ran on the worker version it started on',
} as const;

export async function checkInvariants(i: CheckInputs): Promise<Check[]> {
  return [
    outcomes(i.buyers),
    oversold(i.product, i.buyers),
    await ledger(i),
    await paidSessions(i),
    refundReasons(i.buyers),
    await failedSagas(i),
    await stuckSagas(i),
    ...(i.buyers.some((b) => b.behaviour === 'bot') ? [botsStopped(i.buyers)] : []),
    ...(i.abuse ? [addressLimits(i.abuse, i.crowdAnswers ?? [])] : []),
    ...(i.versions ? [pinnedToVersions(i.versions)] : []),
  ];
}

/** With a deploy (Worker Versioning): no saga's workflow tasks ran on two versions. */
function pinnedToVersions(v: { byBuild: Record<string, number>; moved: string[] }): Check {
  const name = CHECK_NAMES.versions;
  const per = Object.entries(v.byBuild)
    .map(([build, n]) => `${build}: ${n}`)
    .join(', ');
  return v.moved.length
    ? fail(name, `${v.moved.length} moved: ${some(v.moved)}`)
    : pass(name, `sagas per version: ${per}`);
}

/**
 * The crowd's share of requests the per-address limits may refuse: its buyers share keep-alive
 * connections, each from one address (as buyers behind one NAT do), and a burst of retries on one
 * connection can meet the limit; a limit that took the crowd for the abuser would refuse far more.
 */
const CROWD_LIMITED_AT_MOST = 0.01;

/** With --abuser: the per-address limits refused the one abusive address, and hardly anyone else. */
function addressLimits(abuse: AbuseFigures, crowd: Array<{ answer: string; count: number }>): Check {
  const name = CHECK_NAMES.addressLimits;
  const crowdLimited = crowd.filter((a) => / 429 rate-limited$/.test(a.answer)).reduce((n, a) => n + a.count, 0);
  const crowdRequests = crowd.reduce((n, a) => n + a.count, 0);
  const crowdShare = crowdRequests ? crowdLimited / crowdRequests : 0;
  const abuseShare = abuse.requests ? abuse.limited / abuse.requests : 0;
  const detail = `${abuse.address}: ${abuse.limited} of ${abuse.requests} requests limited, ${abuse.served} served, ${abuse.failed} failed, in ${abuse.seconds} s; the crowd: ${crowdLimited} of ${crowdRequests} limited`;
  const held = abuse.limited > 0 && crowdShare <= CROWD_LIMITED_AT_MOST && abuseShare >= 10 * crowdShare;
  return held ? pass(name, detail) : fail(name, detail);
}

/** With bots in the crowd: each ended stopped by the bot check or refunded by the address limit; no human was. */
function botsStopped(buyers: BuyerRecord[]): Check {
  const name = CHECK_NAMES.bots;
  const { bots, humans } = ruleCounts(buyers);
  const through = bots['not stopped'] ?? 0;
  const humansStopped = Object.entries(humans).filter(([k]) => k !== 'not stopped');
  const detail = `bots: ${JSON.stringify(bots)}; humans: ${JSON.stringify(humans)}`;
  return through || humansStopped.length ? fail(name, detail) : pass(name, detail);
}

function outcomes(buyers: BuyerRecord[]): Check {
  const name = CHECK_NAMES.outcomes;
  const without = buyers.filter((b) => !b.outcome).map((b) => `${b.buyerId} (${b.phase})`);
  return without.length
    ? fail(name, `${without.length} without: ${some(without)}`)
    : pass(name, `${buyers.length} buyers`);
}

function oversold(p: ProductCounts, buyers: BuyerRecord[]): Check {
  const name = CHECK_NAMES.oversold;
  const bought = buyers.filter((b) => SOLD_OUTCOMES.has(b.outcome ?? '')).length;
  const wrong: string[] = [];
  if (p.sold + p.held > p.total) wrong.push(`sold ${p.sold} + held ${p.held} > total ${p.total}`);
  if (p.oversold > 0) wrong.push(`${p.oversold} sold beyond stock`);
  if (p.available + p.held + p.sold !== p.total)
    wrong.push(`available ${p.available} + held ${p.held} + sold ${p.sold} != total ${p.total}`);
  if (p.sold !== bought) wrong.push(`sold ${p.sold} but ${bought} buyers were confirmed`);
  const counts = `total ${p.total}, sold ${p.sold}, held ${p.held}, available ${p.available}`;
  return wrong.length ? fail(name, `${wrong.join('; ')} (${counts})`) : pass(name, counts);
}

async function ledger(i: CheckInputs): Promise<Check> {
  const name = CHECK_NAMES.ledger;
  if (!i.db) return skipped(name, 'no DATABASE_URL');
  const diffs = await reconcile(i.db, i.sku);
  return diffs.length
    ? fail(name, some(diffs.map((d) => `${d.what}: expected ${d.expected}, found ${d.actual}`)))
    : pass(name, 'no differences between stock_movements and the stock rows');
}

/** Stripe's view (the emulator): each paid session of this SKU, and the refunds of its payment. */
async function paidSessions(i: CheckInputs): Promise<Check> {
  const name = CHECK_NAMES.paid;
  const byPurchase = new Map(i.buyers.filter((b) => b.purchaseId).map((b) => [b.purchaseId!, b]));
  const refunds = new Map<string, number>();
  for await (const r of i.stripe.refunds.list({ limit: 100 })) {
    const pi = typeof r.payment_intent === 'string' ? r.payment_intent : r.payment_intent?.id;
    if (pi && r.status !== 'failed') refunds.set(pi, (refunds.get(pi) ?? 0) + 1);
  }
  const wrong: string[] = [];
  const paid = new Set<string>();
  let refundsOfSku = 0;
  for await (const s of i.stripe.checkout.sessions.list({ limit: 100 })) {
    if (s.metadata?.sku !== i.sku || s.payment_status !== 'paid') continue;
    const purchaseId = s.metadata.purchase_id;
    paid.add(purchaseId);
    const b = byPurchase.get(purchaseId);
    const pi = typeof s.payment_intent === 'string' ? s.payment_intent : s.payment_intent?.id;
    const n = pi ? (refunds.get(pi) ?? 0) : 0;
    refundsOfSku += n;
    const status = b?.status ?? 'unknown to the buyers';
    if (!PAID_OUTCOMES.has(status)) wrong.push(`${purchaseId} paid (session ${s.id}) but ended ${status}`);
    else if ((status === 'refunded' ? 1 : 0) !== n)
      wrong.push(`${purchaseId} paid, ended ${status}, with ${n} refund(s)`);
  }
  for (const b of i.buyers) {
    if (!b.purchaseId) continue;
    if (PAID_OUTCOMES.has(b.status ?? '') && !paid.has(b.purchaseId))
      wrong.push(`${b.purchaseId} ended ${b.status} without a paid session`);
    if (b.paid && b.paid !== 'bank_debit' && !paid.has(b.purchaseId))
      wrong.push(`${b.purchaseId}: the buyer paid (${b.paid}) but Stripe shows no paid session`);
  }
  return wrong.length
    ? fail(name, `${wrong.length}: ${some(wrong)}`)
    : pass(name, `${paid.size} paid sessions, ${refundsOfSku} refunds`);
}

function refundReasons(buyers: BuyerRecord[]): Check {
  const name = CHECK_NAMES.refundReasons;
  const refunded = buyers.filter((b) => b.status === 'refunded');
  const bare = refunded.filter((b) => !b.refund?.reason.trim()).map((b) => b.purchaseId!);
  return bare.length
    ? fail(name, `${bare.length} of ${refunded.length} refunds without one: ${some(bare)}`)
    : pass(name, `${refunded.length} refunds, each with its reason`);
}

async function failedSagas(i: CheckInputs): Promise<Check> {
  const name = CHECK_NAMES.failed;
  const failed = i.buyers.filter((b) => b.status === 'failed').map((b) => `${b.purchaseId} failed`);
  let executions = 'Temporal not checked (no TEMPORAL_ADDRESS)';
  if (i.temporal) {
    const query = `WorkflowType="purchaseWorkflow" AND Sku="${i.sku}" AND (ExecutionStatus="Failed" OR ExecutionStatus="Terminated" OR ExecutionStatus="TimedOut")`;
    for await (const w of i.temporal.workflow.list({ query })) failed.push(`${w.workflowId} ${w.status.name}`);
    const { count } = await i.temporal.workflow.count(`WorkflowType="purchaseWorkflow" AND Sku="${i.sku}"`);
    executions = `${count} purchase sagas`;
  }
  return failed.length ? fail(name, `${failed.length}: ${some(failed)}`) : pass(name, executions);
}

async function stuckSagas(i: CheckInputs): Promise<Check> {
  const name = CHECK_NAMES.stuck;
  const wrong = i.buyers
    .filter((b) => b.outcome?.startsWith('unsettled') || b.status === 'needs_attention')
    .map((b) => `${b.purchaseId} ${b.outcome}`);
  if (i.temporal) {
    // By now every hold has lapsed or been paid: a saga still holding 5 s past its expiry is stuck.
    const scan = await scanStuckSagas(i.temporal, { olderThanMs: 5000, sku: i.sku, db: i.db });
    for (const s of scan.stuck) wrong.push(`${s.workflowId}: ${s.reason}`);
  }
  const scope = i.temporal ? 'the buyers and Temporal' : 'the buyers (Temporal not checked: no TEMPORAL_ADDRESS)';
  return wrong.length ? fail(name, `${wrong.length}: ${some(wrong)}`) : pass(name, `nothing stuck, by ${scope}`);
}
