import { condition } from '@temporalio/workflow';
import type { RefundState } from '../activities/stripe';
import { settledByHand, type RefundSummary } from '../vocabulary';
import { attended, refundSettled, refusalOf, type SupportDesk } from './attended';
import { DURATIONS } from './durations';
import { stripeActs } from './proxies';

// A refund followed to its end: Stripe's answer to the create call is only its first status. The
// refund's webhook (signal `refundEvent`) or, when that is late, a read of the refund says how it
// ended; a failed refund is shown to support, who can have it tried again or settle it by hand.

export type RefundNews =
  /** Stripe accepted the refund (its status may still be `pending`). */
  | { phase: 'created'; refund: RefundState }
  /** The refund succeeded. */
  | { phase: 'succeeded'; refund: RefundState }
  /** The refund failed (or stays pending too long): support sees it; `reason` says why. */
  | { phase: 'failed'; refund: RefundState; reason: string }
  /** Support settled it by hand. */
  | { phase: 'by_hand'; note: string; actor: string };

export interface RefundPlan {
  desk: SupportDesk;
  /**
   * Creates the refund; `attempt` > 0 after an earlier one was refused or failed: a new idempotency
   * key, since Stripe answers a key it refused with the same refusal for a day.
   */
  create: (attempt: number) => Promise<RefundState>;
  /** Writes each step to the record; `failed` also moves the purchase to `needs_attention`. */
  record: (news: RefundNews) => Promise<void>;
}

export type RefundEnd =
  { outcome: 'succeeded'; refund: RefundState } | { outcome: 'by_hand'; note: string; actor: string };

/** The refund on the record once it ended: Stripe's refund, or, settled by hand, who did it and how. */
export function endedRefund(reason: string, ended: RefundEnd): RefundSummary {
  return ended.outcome === 'by_hand'
    ? { status: 'settled', reason: settledByHand(ended) }
    : { status: ended.refund.status, reason, refundId: ended.refund.refundId };
}

/** Refunds, and follows the refund until its money is back with the buyer or support has settled it. */
export async function refundToTheEnd(plan: RefundPlan): Promise<RefundEnd> {
  const { desk } = plan;
  let attempt = 0;
  for (;;) {
    const made = await attended('refunding the payment', () => plan.create(attempt), {
      desk,
      flag: (reason) => {
        attempt++; // a refused create made no refund: the next try is a new request
        return plan.record({ phase: 'failed', refund: { status: 'failed', failureReason: reason }, reason });
      },
    });
    if (made.outcome !== 'done') return byHand(plan, desk);
    await plan.record({ phase: 'created', refund: made.value });
    const ended = await follow(desk, made.value);
    if (ended.status === 'succeeded') {
      await plan.record({ phase: 'succeeded', refund: ended });
      return { outcome: 'succeeded', refund: ended };
    }
    const why = refundSettled(ended.status)
      ? `the refund ${ended.status}${ended.failureReason ? `: ${ended.failureReason}` : ''}`
      : 'the refund is still pending after 30 days';
    // Counted before the failure is shown: support may read it and retry while the write returns.
    const retriesSeen = desk.retries;
    await plan.record({ phase: 'failed', refund: ended, reason: why });
    await condition(() => desk.retries > retriesSeen || desk.settled !== undefined);
    if (desk.settled) return byHand(plan, desk);
    attempt++;
  }
}

async function byHand(plan: RefundPlan, desk: SupportDesk): Promise<RefundEnd> {
  const { note, actor } = desk.settled!;
  await plan.record({ phase: 'by_hand', note, actor });
  return { outcome: 'by_hand', note, actor };
}

/** Waits for the refund's webhook, reading the refund from Stripe when it is late. */
async function follow(desk: SupportDesk, first: RefundState): Promise<RefundState> {
  let refund = first;
  const refundId = first.refundId;
  if (!refundId) return refund; // Stripe said the payment was already refunded in full
  const started = Date.now();
  for (let round = 0; !refundSettled(refund.status); round++) {
    if (Date.now() - started > DURATIONS.refundPendingTooLongMs) return refund;
    const heard = await condition(
      () => refundSettled(desk.refund(refundId)?.status ?? 'pending'),
      DURATIONS.refundReadAfterMs[Math.min(round, DURATIONS.refundReadAfterMs.length - 1)],
    );
    if (heard) {
      refund = { ...refund, ...desk.refund(refundId)! };
      continue;
    }
    try {
      refund = await stripeActs().getRefund(refundId);
    } catch (err) {
      if (!refusalOf(err)) throw err; // a refused read changes nothing: wait for the webhook
    }
  }
  return refund;
}
