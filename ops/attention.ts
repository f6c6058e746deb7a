import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import { tellOrRefundAgain, tellStraySupportAction } from '../client/refunds';
import type { Db } from '../store/db';
import { getStrayPayment, listStrayPayments, updateStrayPayment, type StrayPayment } from '../store/payments';
import { appendAudit, getPurchase, listNeedingAttention, type PurchaseRecord } from '../store/purchases';
import {
  purchaseWorkflowId,
  refundWorkflowId,
  settledByHand,
  strayPaymentWorkflowId,
  type SupportAction,
} from '../vocabulary';
import { MIN_FAILING_ATTEMPTS } from './stuck-sagas';
import { whyItWaits } from './stuck-records';
import { describeActivity, toPendingActivity } from './temporal-describe';

// Support's path for money that waits on a Stripe step Stripe refused (status `needs_attention`):
// tell the waiting saga to try again now, or that the step was settled by hand (say, a refund by bank
// transfer), then report what the saga recorded. The saga does the work and writes the outcome; the
// CLI adds an `audit_log` row naming who asked. Each returns the exit code: 0 done (or told, and no
// answer yet), 1 nothing to act on or Stripe refused again.

export interface AttentionDeps {
  db: Db;
  temporal: Client;
  /** Where a refund made again runs (a refund that failed after its saga ended). */
  taskQueue: string;
  /** Who asks, for the audit trail (`support-cli:<user>`). */
  actor: string;
  /** How long to wait for the saga's answer on the record. */
  waitMs?: number;
}

const DEFAULT_WAIT_MS = 15_000;
/**
 * The Stripe steps support can settle by hand while Stripe keeps failing them: the session's expire
 * (workflows/end-of-wait.ts, `settleEndsCall`). A refund is never abandoned mid-call.
 */
const STRIPE_STEPS: readonly string[] = ['expireCheckout'];
const POLL_MS = 200;

/** What support says: try the refused step again now, or it was settled by hand (with a note). */
export type SupportVerb = { action: 'retry' } | { action: 'settled'; note: string };

const fail = (line: string): number => {
  console.error(`support: ${line}`);
  return 1;
};

function toAction(verb: SupportVerb, actor: string): SupportAction {
  return verb.action === 'retry' ? { action: 'retry', actor } : { action: 'settled', actor, note: verb.note };
}

/** Polls `read` until the row changed since `before` (its `updatedAt`), or the wait is over. */
async function changed<T extends { updatedAt: string }>(
  read: () => Promise<T | null>,
  before: T,
  waitMs: number,
): Promise<T | null> {
  const deadline = Date.now() + waitMs;
  while (Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, POLL_MS));
    const now = await read();
    if (now && now.updatedAt !== before.updatedAt) return now;
  }
  return null;
}

function describePurchase(p: PurchaseRecord): string {
  const refund = p.refund ? `, refund ${p.refund.status} (${p.refund.reason})` : '';
  return `${p.status}${refund}`;
}

/**
 * The Stripe step a running saga of the purchase keeps retrying (Stripe answering 5xx, or not at all:
 * attempt MIN_FAILING_ATTEMPTS or later), as `npm run sagas -- stuck` reports it; null when none is.
 */
async function failingStripeStep(temporal: Client, purchaseId: string): Promise<string | null> {
  for (const workflowId of [purchaseWorkflowId(purchaseId), refundWorkflowId(purchaseId)]) {
    let described;
    try {
      described = await temporal.workflow.getHandle(workflowId).describe();
    } catch (err) {
      if (err instanceof WorkflowNotFoundError) continue;
      throw err;
    }
    if (described.status.name !== 'RUNNING') continue;
    const failing = (described.raw.pendingActivities ?? [])
      .map(toPendingActivity)
      .find((a) => a.attempt >= MIN_FAILING_ATTEMPTS && STRIPE_STEPS.includes(a.activityType));
    if (failing) return `${workflowId}: ${describeActivity(failing)}`;
  }
  return null;
}

/** `retry <purchaseId>` / `settle <purchaseId> --note`: support's word to the sagas of a purchase in `needs_attention`. */
export async function actOnPurchase(deps: AttentionDeps, purchaseId: string, verb: SupportVerb): Promise<number> {
  const record = await getPurchase(deps.db, purchaseId);
  if (!record || record.status === 'rejected') return fail(`no purchase ${purchaseId}`);
  // A Stripe step failing with 5xx is not needs_attention (nothing refused it), but only a person can end
  // it when Stripe never will: the step done by hand (a session expired with the Stripe CLI), `settle` says so.
  const failing = record.status !== 'needs_attention' && verb.action === 'settled';
  const step = failing ? await failingStripeStep(deps.temporal, purchaseId) : null;
  if (record.status !== 'needs_attention' && !step) {
    const also = verb.action === 'settled' ? ', and no Stripe step of its sagas keeps failing' : '';
    return fail(`purchase ${purchaseId} is ${record.status}, not needs_attention${also}: nothing waits for support`);
  }
  if (step) console.log(`settling by hand the step that keeps failing: ${step}`);
  const told = await tellOrRefundAgain(deps, record, toAction(verb, deps.actor));
  if (told.length === 0) {
    return fail(
      `no saga of purchase ${purchaseId} is running (${purchaseWorkflowId(purchaseId)}, ${refundWorkflowId(purchaseId)}): ` +
        `nothing waits to hear it. The record says: ${record.reason ?? 'no reason recorded'}`,
    );
  }
  await appendAudit(deps.db, purchaseId, deps.actor, verb.action === 'retry' ? 'support_retry' : 'settled_by_hand', {
    told,
    ...(verb.action === 'settled' ? { note: verb.note } : {}),
  });
  const asked = verb.action === 'retry' ? 'to try again now' : 'that it was settled by hand';
  console.log(`told ${told.join(' and ')} ${asked}`);
  const now = await changed(() => getPurchase(deps.db, purchaseId), record, deps.waitMs ?? DEFAULT_WAIT_MS);
  if (!now) {
    console.log(`purchase ${purchaseId}: no answer yet; the saga records it (npm run support -- list-attention)`);
    return 0;
  }
  if (now.status === 'needs_attention') {
    return fail(`purchase ${purchaseId}: Stripe refused again: ${now.reason}; its saga keeps retrying with backoff`);
  }
  console.log(`purchase ${purchaseId}: ${describePurchase(now)}`);
  return 0;
}

/** `retry-stray <sessionId>` / `settle-stray <sessionId> --note`: the same for the refund of a stray payment. */
export async function actOnStray(deps: AttentionDeps, sessionId: string, verb: SupportVerb): Promise<number> {
  const stray = await getStrayPayment(deps.db, sessionId);
  if (!stray) return fail(`no stray payment on session ${sessionId}`);
  if (stray.status !== 'needs_attention') {
    return fail(`the stray payment on ${sessionId} is ${stray.status}, not needs_attention: nothing waits for support`);
  }
  const workflowId = strayPaymentWorkflowId(sessionId);
  if (!(await tellStraySupportAction(deps.temporal, sessionId, toAction(verb, deps.actor)))) {
    // Its saga has ended (its refund failed after it did): settled by hand is written here; no refund
    // of the payment is made again from here.
    if (verb.action === 'settled') return settleEndedStray(deps, stray, verb.note);
    return fail(
      `its saga ${workflowId} has ended: no refund of this payment is made again from here. The record says: ` +
        `${stray.detail ?? stray.why}. Refund payment ${stray.paymentIntentId ?? '(unknown)'} in the Stripe Dashboard, ` +
        `then: npm run support -- settle-stray ${sessionId} --note "what was done"`,
    );
  }
  await appendAudit(
    deps.db,
    stray.claimedPurchase,
    deps.actor,
    verb.action === 'retry' ? 'stray_support_retry' : 'stray_settled_by_hand',
    { sessionId, ...(verb.action === 'settled' ? { note: verb.note } : {}) },
  );
  console.log(`told ${workflowId} ${verb.action === 'retry' ? 'to try again now' : 'that it was settled by hand'}`);
  const now = await changed(() => getStrayPayment(deps.db, sessionId), stray, deps.waitMs ?? DEFAULT_WAIT_MS);
  if (!now) {
    console.log(`stray payment ${sessionId}: no answer yet; its saga records it (npm run support -- list-attention)`);
    return 0;
  }
  if (now.status === 'needs_attention') {
    return fail(
      `stray payment ${sessionId}: Stripe refused again: ${now.detail}; its saga keeps retrying with backoff`,
    );
  }
  // `detail` keeps the last refusal once the refund went through: it says something only when settled by hand.
  const what = now.status === 'settled_by_hand' ? ` (${now.detail})` : now.refundId ? ` (refund ${now.refundId})` : '';
  console.log(`stray payment ${sessionId}: ${now.status}${what}`);
  return 0;
}

/** A stray payment whose saga has ended, settled by hand: written here, with the audit row. */
async function settleEndedStray(deps: AttentionDeps, stray: StrayPayment, note: string): Promise<number> {
  const detail = settledByHand({ actor: deps.actor, note });
  await updateStrayPayment(deps.db, stray.sessionId, { status: 'settled_by_hand', detail });
  await appendAudit(deps.db, stray.claimedPurchase, deps.actor, 'stray_settled_by_hand', {
    sessionId: stray.sessionId,
    note,
  });
  console.log(`stray payment ${stray.sessionId}: settled_by_hand (${detail})`);
  return 0;
}

function strayLine(s: StrayPayment): string {
  const amount = s.amountCents !== undefined ? `${s.amountCents} ${s.currency ?? ''} minor units` : 'amount unknown';
  return `  ${s.sessionId}  naming ${s.claimedPurchase}  ${amount}  since ${s.updatedAt}  ${s.detail ?? s.why}`;
}

/** `list-attention [--sku SKU]`: purchases and stray payments in `needs_attention`, with why. */
export async function listAttention(db: Db, sku: string | undefined, limit = 1000): Promise<number> {
  const purchases = await listNeedingAttention(db, { sku, limit });
  const strays = (await listStrayPayments(db, { status: 'needs_attention' })).slice(0, limit);
  const shown: StrayPayment[] = [];
  for (const s of strays) if (!sku || (await getPurchase(db, s.claimedPurchase))?.sku === sku) shown.push(s);
  if (purchases.length === 0 && shown.length === 0) {
    console.log(`nothing needs attention${sku ? ` for ${sku}` : ''}`);
    return 0;
  }
  console.log(`purchases in needs_attention: ${purchases.length}`);
  for (const p of purchases) {
    const why = whyItWaits(p.reason, p.refund?.failureReason);
    console.log(`  ${p.purchaseId}  ${p.sku}  ${p.buyerId}  since ${p.updatedAt}  ${why}`);
  }
  console.log(`stray payments in needs_attention: ${shown.length}`);
  for (const s of shown) console.log(strayLine(s));
  console.log(
    '\nnpm run support -- retry <purchaseId> | settle <purchaseId> --note "..." | retry-stray <sessionId> | settle-stray <sessionId> --note "..."',
  );
  return 0;
}
