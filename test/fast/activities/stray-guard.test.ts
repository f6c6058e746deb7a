import test from 'ava';
import { strayRefusal, type StraySessionAtStripe } from '../../../activities/stray-guard';

// Which money the stray-payment path may refund: decided from Stripe's session and our records.

const claim = { claimedPurchase: 'p_b', paymentIntentId: 'pi_1' };
const stray: StraySessionAtStripe = { sessionId: 'cs_1', found: true, purchaseId: 'p_b', paymentIntentId: 'pi_1' };

test('money on a session Stripe says names the purchase, which no purchase recorded, may be refunded', (t) => {
  t.is(strayRefusal(claim, stray, null), null);
  // The event may leave the payment out: the saga read it from Stripe.
  t.is(strayRefusal({ claimedPurchase: 'p_b' }, stray, null), null);
});

test("a purchase's own session or payment is never refunded as stray", (t) => {
  const ownSession = { purchaseId: 'p_a', status: 'confirmed', sessionId: 'cs_1', paymentIntentId: 'pi_1' };
  t.regex(
    strayRefusal(claim, stray, ownSession) ?? '',
    /session cs_1 is the Checkout Session of purchase p_a \(confirmed\)/,
  );
  // Recorded before its payment: still that purchase's money.
  const awaiting = { purchaseId: 'p_a', status: 'awaiting_payment', sessionId: 'cs_1' };
  t.regex(strayRefusal(claim, stray, awaiting) ?? '', /purchase p_a \(awaiting_payment\)/);
  const ownPayment = { purchaseId: 'p_a', status: 'late_confirmed', sessionId: 'cs_9', paymentIntentId: 'pi_1' };
  t.regex(strayRefusal(claim, stray, ownPayment) ?? '', /payment pi_1 is the payment of purchase p_a/);
});

test('a session Stripe does not know, or that names another purchase or none, is not refunded', (t) => {
  t.regex(strayRefusal(claim, { sessionId: 'cs_1', found: false }, null) ?? '', /Stripe has no session cs_1/);
  t.regex(strayRefusal(claim, { ...stray, purchaseId: undefined }, null) ?? '', /names no purchase of ours/);
  t.regex(strayRefusal(claim, { ...stray, purchaseId: 'p_c' }, null) ?? '', /names purchase p_c, not p_b/);
});

test("a session without a payment, or paid with another than the event's, is not refunded", (t) => {
  t.regex(strayRefusal(claim, { ...stray, paymentIntentId: undefined }, null) ?? '', /has no payment/);
  t.regex(
    strayRefusal({ ...claim, paymentIntentId: 'pi_of_a_sale' }, stray, null) ?? '',
    /the event named payment pi_of_a_sale, but Stripe's session cs_1 was paid with pi_1/,
  );
});
