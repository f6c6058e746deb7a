import { patched } from '@temporalio/workflow';
import type { RefundAgainInput, SupportRefundResult } from '../vocabulary';
import { SupportDesk } from './attended';
import { acts, stripeActs } from './proxies';
import { endedRefund, refundToTheEnd } from './refunds';
import { recordSupportRefund, showStatus } from './support-refund';

/** Runs started before it told the buyer of a refund made again only when Stripe made it, not when settled by hand. */
const SETTLED_AGAIN_TELLS_PATCH = 'refund-again-settled-tells-buyer';

/**
 * Makes again a refund that failed after the saga that made it had ended (the purchase is then
 * `needs_attention` and no saga waits to hear support). Started by support's word (retry, settle, or
 * the support refund again) through signal-with-start, that word its first signal, under the refund
 * path's workflow id `refund-<purchaseId>`: support's later words and the new refund's events reach it
 * as they reach a support refund. Stripe refund with key `refund-support-<purchaseId>-after-<failed
 * refund id>` (each failed refund is made again at most once, and Stripe refuses more than the charge),
 * followed to its end; settled by hand, nothing is refunded. Nothing goes on sale: a restock asked of
 * the first refund was done when it succeeded. The buyer is told once the refund is made, by Stripe or
 * by hand, as a support refund tells them.
 *
 * The key's `unknown` (a failed refund Stripe refused to create has no id) cannot meet itself in a
 * second run: a run ends only refunded or settled, and a refund that fails after that has an id.
 */
export async function refundAgainWorkflow(input: RefundAgainInput): Promise<SupportRefundResult> {
  const desk = new SupportDesk().listen();
  const { purchaseId } = input;
  const record = await acts.loadPurchase(purchaseId);
  const failed = record?.refund;
  if (!record || record.status !== 'needs_attention' || failed?.status !== 'failed' || !record.paymentIntentId) {
    const now = record ? `is ${record.status}, refund ${failed?.status ?? 'none'}` : 'does not exist';
    return { purchaseId, outcome: 'not_refundable', detail: `the purchase ${now}: no failed refund to make again` };
  }
  const paymentIntentId = record.paymentIntentId;
  const reason = failed.reason;
  const ended = await refundToTheEnd({
    desk,
    create: (attempt) =>
      stripeActs().refundPayment({
        purchaseId,
        paymentIntentId,
        reason,
        step: 'support',
        replaces: failed.refundId ?? 'unknown',
        attempt,
      }),
    record: (news) => recordSupportRefund({ purchaseId, reason }, news),
  });
  const summary = endedRefund(reason, ended);
  await acts.recordPurchase(purchaseId, { status: 'refunded', reason, refund: summary });
  showStatus('refunded');
  await acts.appendAudit(purchaseId, 'saga', 'refunded', { refundId: summary.refundId, replaces: failed.refundId });
  /* istanbul ignore else -- only the replay of a history from before the patch settles untold */
  if (ended.outcome === 'succeeded' || patched(SETTLED_AGAIN_TELLS_PATCH)) {
    await acts.notifyBuyer(
      purchaseId,
      record.buyerId,
      'refunded_again',
      `Your refund had failed and was made again: ${reason}`,
    );
  }
  return { purchaseId, outcome: 'refunded', refund: summary };
}
