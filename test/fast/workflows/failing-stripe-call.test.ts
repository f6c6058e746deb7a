import test from 'ava';
import { paymentEventSignal, supportActionSignal } from '../../../workflows/definitions';
import { called, gate, sagaKnowsSession, sessionOpen, startPurchase, until } from '../helpers/saga';
import { useFastTemporal } from '../helpers/temporal';
import { refusal, type Overrides } from '../helpers/world';

// A Stripe call that keeps failing with 5xx (the activity retries it, no refusal reaches the saga):
// the session expired by hand, a payment, or support's settlement ends it, whether the saga was
// closing the session at the lapse or compensating an operator's cancel (docs/runbook.md, "A
// Stripe step that keeps failing").

const temporal = useFastTemporal(test);

/** Stripe answers 500 to every expire: the activity's retry policy tries it again, for ever. */
const expireFails500: Overrides = {
  expireCheckout: () => {
    throw new Error('Stripe answered 500: Injected fault: HTTP 500.');
  },
};

/** A saga whose session is open and whose operator cancel is stuck expiring it. */
async function cancelStuckOnExpire(overrides: Overrides = {}) {
  const c = temporal().world.open({ ...expireFails500, ...overrides });
  const saga = await startPurchase(temporal(), c);
  await sessionOpen(c);
  // The record has the session before the saga reads the step's answer: a cancel in between
  // cancels that step, and the saga, knowing no session, has none to expire.
  await sagaKnowsSession(saga);
  await saga.cancel();
  await called(c, 'expireCheckout', 2);
  return { c, saga };
}

test('an operator’s cancel stuck on a failing expire ends once Stripe says the session expired', async (t) => {
  const { c, saga } = await cancelStuckOnExpire();
  t.is(c.record?.status, 'awaiting_payment', 'still retrying the expire');
  await saga.signal(paymentEventSignal, c.event('checkout.session.expired'));
  await t.throwsAsync(saga.result());
  t.like(c.record, { status: 'failed', reason: 'cancelled by an operator' });
  t.deepEqual(c.names('releaseHold'), ['releaseHold']);
});

test('an operator’s cancel stuck on a failing expire still sells to a buyer who pays meanwhile', async (t) => {
  const { c, saga } = await cancelStuckOnExpire();
  await saga.signal(paymentEventSignal, c.event('checkout.session.completed', { paymentStatus: 'paid' }));
  await t.throwsAsync(saga.result());
  t.like(c.record, { status: 'confirmed' });
  t.is(c.count('releaseHold'), 0);
});

test('an operator’s cancel stuck on a failing expire ends when support settles it by hand', async (t) => {
  const { c, saga } = await cancelStuckOnExpire();
  await saga.signal(supportActionSignal, { action: 'settled', actor: 'ana', note: 'expired with the Stripe CLI' });
  await t.throwsAsync(saga.result());
  t.like(c.record, { status: 'failed', reason: 'cancelled by an operator' });
  t.deepEqual(c.names('releaseHold'), ['releaseHold']);
});

test('a close at the lapse stuck on a failing expire ends once Stripe says the session expired', async (t) => {
  const c = temporal().world.open(expireFails500);
  c.holdMs = 3_000;
  const saga = await startPurchase(temporal(), c);
  await called(c, 'expireCheckout', 2);
  await saga.signal(paymentEventSignal, c.event('checkout.session.expired'));
  t.like(await saga.result(), { status: 'expired', reason: 'the hold lapsed before payment' });
  t.deepEqual(c.names('releaseHold'), ['releaseHold']);
});

test('support’s settlement of a failing expire settles that step only: a payment that lands after is refunded through Stripe', async (t) => {
  // The hold goes back only once the payment is in the saga's history: it lands while the saga is finishing.
  const landed = gate(t);
  const c = temporal().world.open({
    ...expireFails500,
    releaseHold: () => landed.passed().then(() => ({ released: true, status: 'expired' as const })),
    retakeForLatePayment: () => ({ outcome: 'sold_out', oversold: false }),
  });
  c.holdMs = 3_000;
  const saga = await startPurchase(temporal(), c);
  await called(c, 'expireCheckout', 2);
  await saga.signal(supportActionSignal, { action: 'settled', actor: 'ana', note: 'expired with the Stripe CLI' });
  await called(c, 'releaseHold');
  await saga.signal(paymentEventSignal, c.event('checkout.session.completed', { paymentStatus: 'paid' }));
  landed.open();
  t.like(await saga.result(), { status: 'refunded', refund: { status: 'succeeded' } });
  t.is(c.count('refundPayment'), 1, 'a real refund, not one taken as settled by hand');
  await until(() => c.notified.includes('refunded_sold_out'), 'the buyer told');
});

test('support’s settlement of a refused expire settles that step only: a payment that lands after is refunded through Stripe', async (t) => {
  const landed = gate(t);
  const c = temporal().world.open({
    // Stripe refuses the expire (a 4xx): the purchase waits for support, who closes it in the Dashboard.
    expireCheckout: () => {
      throw refusal('expiring the Checkout Session: Stripe answered 400: the session cannot be expired');
    },
    releaseHold: () => landed.passed().then(() => ({ released: true, status: 'expired' as const })),
    retakeForLatePayment: () => ({ outcome: 'sold_out', oversold: false }),
  });
  c.holdMs = 3_000;
  const saga = await startPurchase(temporal(), c);
  await until(() => c.record?.status === 'needs_attention', 'the refusal shown to support');
  await saga.signal(supportActionSignal, { action: 'settled', actor: 'ana', note: 'expired in the Dashboard' });
  await called(c, 'releaseHold');
  await saga.signal(paymentEventSignal, c.event('checkout.session.completed', { paymentStatus: 'paid' }));
  landed.open();
  t.like(await saga.result(), { status: 'refunded', refund: { status: 'succeeded' } });
  t.is(c.count('refundPayment'), 1, 'a real refund, not one taken as settled by hand');
});
