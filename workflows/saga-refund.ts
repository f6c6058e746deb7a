import { condition } from '@temporalio/workflow';
import { settledByHand, type PurchaseState, type PurchaseStatus } from '../vocabulary';
import type { SupportDesk } from './attended';
import { acts, stripeActs } from './proxies';
import { refundToTheEnd, type RefundNews } from './refunds';

// The refund of a payment the purchase saga could not keep (a late payment with no unit left, a
// payment the purchase rules refuse): made in full, the buyer told why, followed to its end.

/** What the refund needs of the purchase saga (saga.ts). */
export interface RefundingSaga {
  readonly state: PurchaseState;
  readonly desk: SupportDesk;
  /** Set as the refund starts (see PurchaseSaga.refunding). */
  refunding?: { reason: string; kind: string };
  learnPaymentIntent(): Promise<void>;
  setStatus(status: PurchaseStatus, patch: Partial<PurchaseState>): Promise<void>;
}

/** Refunds the payment in full, tells the buyer why (notification `kind`), and follows the refund to its end. */
export async function refundPaid(saga: RefundingSaga, reason: string, kind: string): Promise<void> {
  const { state } = saga;
  saga.refunding = { reason, kind };
  // A payment event that named no PaymentIntent: Stripe's session says which one to refund.
  await saga.learnPaymentIntent();
  const paymentIntentId = state.paymentIntentId;
  if (!paymentIntentId) {
    // Stripe will not say what paid the session: support refunds it by hand and settles it here.
    await saga.setStatus('needs_attention', { reason: `${reason}; the paid session names no PaymentIntent` });
    await condition(() => saga.desk.settled !== undefined);
    return recordRefund(saga, reason, kind, { phase: 'by_hand', ...saga.desk.settled! });
  }
  await refundToTheEnd({
    desk: saga.desk,
    create: (attempt) =>
      stripeActs().refundPayment({ purchaseId: state.purchaseId, paymentIntentId, reason, step: 'late', attempt }),
    record: (news) => recordRefund(saga, reason, kind, news),
  });
}

/** Each step of the refund of a payment the saga could not keep, on the record. */
async function recordRefund(saga: RefundingSaga, reason: string, kind: string, news: RefundNews): Promise<void> {
  const { state } = saga;
  switch (news.phase) {
    case 'created':
      await acts.notifyBuyer(state.purchaseId, state.buyerId, kind, `Your payment was refunded. ${reason}.`);
      return saga.setStatus('refunded', {
        paymentIntentId: state.paymentIntentId,
        reason,
        refund: { status: news.refund.status, reason, refundId: news.refund.refundId },
      });
    case 'succeeded':
      return saga.setStatus('refunded', {
        reason,
        refund: { status: 'succeeded', reason, refundId: news.refund.refundId },
      });
    case 'failed':
      return saga.setStatus('needs_attention', {
        // With the payment: support's word reaches a run that makes the refund again once this saga ends.
        paymentIntentId: state.paymentIntentId,
        reason: `${reason}; ${news.reason}`,
        refund: {
          status: 'failed',
          reason,
          refundId: news.refund.refundId,
          failureReason: news.refund.failureReason ?? news.reason,
        },
      });
    case 'by_hand':
      return saga.setStatus('refunded', {
        reason,
        refund: { status: 'settled', reason: settledByHand(news) },
      });
  }
}
