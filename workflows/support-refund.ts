import { proxyActivities } from '@temporalio/workflow';
import type { Activities } from '../activities';
import { isRefundable, type SupportRefundInput, type SupportRefundResult } from '../vocabulary';

const acts = proxyActivities<Activities>({
  startToCloseTimeout: '30 seconds',
  retry: {
    initialInterval: '500 milliseconds',
    maximumInterval: '1 minute',
    nonRetryableErrorTypes: ['StripeRejected'],
  },
});

/**
 * Support refunds a confirmed order: Stripe refund with key `refund-support-<purchaseId>`, then,
 * if asked, the unit goes back on sale (`sold` → `restocked`, once), with an audit trail and a
 * note to the buyer. Workflow id `refund-<purchaseId>`: a second request joins the first.
 */
export async function supportRefundWorkflow(input: SupportRefundInput): Promise<SupportRefundResult> {
  const record = await acts.loadPurchase(input.purchaseId);
  if (!record) return { purchaseId: input.purchaseId, outcome: 'not_refundable', detail: 'no such purchase' };
  if (record.status === 'refunded' && record.refund) {
    return { purchaseId: input.purchaseId, outcome: 'refunded', refund: record.refund };
  }
  if (!isRefundable(record.status) || !record.paymentIntentId) {
    return {
      purchaseId: input.purchaseId,
      outcome: 'not_refundable',
      detail: `a purchase in status ${record.status} has no captured payment to refund`,
    };
  }
  await acts.appendAudit(input.purchaseId, input.actor, 'refund_requested', {
    reason: input.reason,
    restock: input.restock,
  });
  const refund = await acts.refundPayment({
    purchaseId: input.purchaseId,
    paymentIntentId: record.paymentIntentId,
    reason: input.reason,
    step: 'support',
  });
  const restocked = input.restock ? await acts.restockSale(input.purchaseId) : false;
  const summary = { status: refund.status, reason: input.reason, refundId: refund.refundId };
  await acts.recordPurchase(input.purchaseId, { status: 'refunded', reason: input.reason, refund: summary });
  await acts.appendAudit(input.purchaseId, input.actor, 'refunded', { refundId: refund.refundId, restocked });
  await acts.notifyBuyer(
    input.purchaseId,
    record.buyerId,
    'refunded_by_support',
    `Your order was refunded: ${input.reason}`,
  );
  return { purchaseId: input.purchaseId, outcome: 'refunded', refund: summary, restocked };
}
