import { ActivityFailure, ApplicationFailure } from '@temporalio/workflow';
import { settledByHand, STRAY_REFUND_REFUSED, type StrayPaymentInput, type StrayPaymentResult } from '../vocabulary';
import { attended, SupportDesk } from './attended';
import { acts, stripeActs } from './proxies';
import { refundToTheEnd, type RefundEnd, type RefundNews } from './refunds';

/**
 * Money that arrived on a Checkout Session that named one of our purchases but was not opened by it
 * (another app on the account, a Payment Link, a forged session): it confirms nothing, and is
 * refunded in full (key `refund-stray-<sessionId>`) and followed to its end. A refund Stripe refuses
 * or that fails is left for support (`stray_payments.status = needs_attention`). The refund step
 * first reads the session from Stripe and checks our records: money that is a purchase's own, or
 * that Stripe's session does not bear out, is not refunded (`refused`, recorded by that step).
 * Workflow id `stray-<sessionId>`: every event of that session joins the one run.
 */
export async function strayPaymentWorkflow(input: StrayPaymentInput): Promise<StrayPaymentResult> {
  const desk = new SupportDesk().listen();
  const flag = (detail: string) => acts.recordStrayPayment(input.sessionId, { status: 'needs_attention', detail });
  let paymentIntentId = input.paymentIntentId;
  if (!paymentIntentId) {
    const read = await attendRead(desk, input.sessionId, flag);
    // Support settled the read by hand: they dealt with the money themselves, and said how.
    if (typeof read === 'object') {
      await acts.recordStrayPayment(input.sessionId, { status: 'settled_by_hand', detail: settledByHand(read) });
      return { sessionId: input.sessionId, outcome: 'settled_by_hand' };
    }
    paymentIntentId = read;
  }
  const reason = `not this purchase's payment: ${input.why}`;
  if (!paymentIntentId) {
    await flag('the paid session names no PaymentIntent: refund it by hand');
    return { sessionId: input.sessionId, outcome: 'needs_attention' };
  }
  const pi = paymentIntentId;
  let ended: RefundEnd;
  try {
    ended = await refundToTheEnd({
      desk,
      create: (attempt) =>
        stripeActs().refundPayment({
          purchaseId: input.claimedPurchase,
          paymentIntentId: pi,
          reason,
          step: 'stray',
          sessionId: input.sessionId,
          attempt,
        }),
      record: (news) => recordNews(input, news),
    });
  } catch (err) {
    // Only a run whose refund step refused ends here (no recorded history has one): no new command
    // for the runs before this code. The step wrote the record; nothing was refunded.
    if (refusedAsNotStray(err)) return { sessionId: input.sessionId, outcome: 'refused' };
    throw err;
  }
  await acts.appendAudit(input.claimedPurchase, 'saga', 'stray_payment_refunded', {
    sessionId: input.sessionId,
    paymentIntentId: pi,
    why: input.why,
    ...(ended.outcome === 'by_hand' ? { byHand: ended.note } : { refundId: ended.refund.refundId }),
  });
  return { sessionId: input.sessionId, outcome: ended.outcome === 'by_hand' ? 'settled_by_hand' : 'refunded' };
}

function refusedAsNotStray(err: unknown): boolean {
  return (
    err instanceof ActivityFailure && err.cause instanceof ApplicationFailure && err.cause.type === STRAY_REFUND_REFUSED
  );
}

async function attendRead(
  desk: SupportDesk,
  sessionId: string,
  flag: (detail: string) => Promise<void>,
): Promise<string | undefined | { note: string; actor: string }> {
  const read = await attended('reading the stray session', () => stripeActs().getSessionPayment(sessionId), {
    desk,
    flag,
  });
  // No interrupt is given: the read is done, or settled by hand.
  return read.outcome === 'done' ? read.value.paymentIntentId : (read as { note: string; actor: string });
}

function recordNews(input: StrayPaymentInput, news: RefundNews): Promise<void> {
  switch (news.phase) {
    case 'created':
      return acts.recordStrayPayment(input.sessionId, { status: 'refunding', refundId: news.refund.refundId });
    case 'succeeded':
      return acts.recordStrayPayment(input.sessionId, { status: 'refunded', refundId: news.refund.refundId });
    case 'failed':
      return acts.recordStrayPayment(input.sessionId, {
        status: 'needs_attention',
        refundId: news.refund.refundId,
        detail: news.reason,
      });
    case 'by_hand':
      return acts.recordStrayPayment(input.sessionId, {
        status: 'settled_by_hand',
        detail: settledByHand(news),
      });
  }
}
