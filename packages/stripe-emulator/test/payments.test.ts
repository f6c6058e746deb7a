import test from 'ava';
import Stripe from 'stripe';

import { WEBHOOK_SECRET, pay, sessionParams, startHarness, waitFor } from './harness';

test('a successful payment completes the session and sends a signed checkout.session.completed', async (t) => {
  const harness = await startHarness(t);
  const { stripe, receiver } = harness;
  const session = await stripe.checkout.sessions.create(sessionParams());

  const paid = await pay(harness, session.id, 'succeeded');
  t.is(paid.status, 200);
  t.is(paid.session.status, 'complete');
  t.is(paid.session.payment_status, 'paid');
  t.regex(paid.session.payment_intent as string, /^pi_/);

  const delivery = await waitFor('the completed event', () => receiver.received.find((r) => r.event));
  t.is(delivery.verifyError, null);
  t.regex(delivery.signature, /^t=\d+,v1=[0-9a-f]{64}$/);
  // The raw body verifies with stripe-node's own webhook check, as in the service's handler.
  const event = stripe.webhooks.constructEvent(delivery.rawBody, delivery.signature, WEBHOOK_SECRET);
  t.is(event.type, 'checkout.session.completed');
  t.regex(event.id, /^evt_/);
  t.is(event.object, 'event');
  t.is(event.livemode, false);
  t.is(event.api_version, Stripe.API_VERSION);
  const object = event.data.object as Stripe.Checkout.Session;
  t.is(object.id, session.id);
  t.is(object.payment_status, 'paid');
  t.deepEqual(object.metadata, { purchase_id: 'p_1' });
  t.is(object.client_reference_id, 'p_1');
  t.is(delivery.headers['content-type'], 'application/json; charset=utf-8');

  const tampered = delivery.rawBody.replace('"paid"', '"unpaid"');
  t.throws(() => stripe.webhooks.constructEvent(tampered, delivery.signature, WEBHOOK_SECRET), {
    instanceOf: Stripe.errors.StripeSignatureVerificationError,
  });

  const intent = await stripe.paymentIntents.retrieve(object.payment_intent as string);
  t.is(intent.status, 'succeeded');
  t.is(intent.amount, 3000);
  t.is(intent.amount_received, 3000);
  t.is(intent.currency, 'usd');
  t.deepEqual(intent.metadata, { purchase_id: 'p_1' });
  t.regex(intent.latest_charge as string, /^ch_/);
});

test('a decline leaves the session open and reports payment_intent.payment_failed with the metadata', async (t) => {
  const harness = await startHarness(t);
  const { stripe, receiver } = harness;
  const session = await stripe.checkout.sessions.create(sessionParams());

  const declined = await pay(harness, session.id, 'declined');
  t.is(declined.status, 200);
  t.is(declined.session.status, 'open');
  t.is(declined.session.payment_status, 'unpaid');

  const [event] = await waitFor('the payment_failed event', () => {
    const events = receiver.accepted('payment_intent.payment_failed');
    return events.length > 0 && events;
  });
  const intent = event.data.object as Stripe.PaymentIntent;
  t.is(intent.id, declined.session.payment_intent as string);
  t.is(intent.status, 'requires_payment_method');
  t.deepEqual(intent.metadata, { purchase_id: 'p_1' });
  t.is(intent.last_payment_error?.code, 'card_declined');
  t.is(intent.last_payment_error?.type, 'card_error');

  // The buyer may try again on the same session; the same PaymentIntent then succeeds.
  const retried = await pay(harness, session.id, 'succeeded');
  t.is(retried.session.payment_intent, intent.id);
  t.is((await stripe.paymentIntents.retrieve(intent.id)).status, 'succeeded');
});

test('a delayed payment completes unpaid, then async_succeeded marks it paid', async (t) => {
  const harness = await startHarness(t);
  const { stripe, receiver } = harness;
  const session = await stripe.checkout.sessions.create(sessionParams());

  const pending = await pay(harness, session.id, 'async_pending');
  t.is(pending.session.status, 'complete');
  t.is(pending.session.payment_status, 'unpaid');
  const intentId = pending.session.payment_intent as string;
  t.is((await stripe.paymentIntents.retrieve(intentId)).status, 'processing');

  const settled = await pay(harness, session.id, 'async_succeeded');
  t.is(settled.session.payment_status, 'paid');
  t.is((await stripe.paymentIntents.retrieve(intentId)).status, 'succeeded');

  const events = await waitFor('both events', () => receiver.accepted().length === 2 && receiver.accepted());
  t.deepEqual(
    events.map((e) => [e.type, (e.data.object as Stripe.Checkout.Session).payment_status]),
    [
      ['checkout.session.completed', 'unpaid'],
      ['checkout.session.async_payment_succeeded', 'paid'],
    ],
  );
});

test('a delayed payment that fails sends checkout.session.async_payment_failed', async (t) => {
  const harness = await startHarness(t);
  const { stripe, receiver } = harness;
  const session = await stripe.checkout.sessions.create(sessionParams());
  await pay(harness, session.id, 'async_pending');

  const failed = await pay(harness, session.id, 'async_failed');
  t.is(failed.status, 200);
  t.is(failed.session.status, 'complete');
  t.is(failed.session.payment_status, 'unpaid');
  const intent = await stripe.paymentIntents.retrieve(failed.session.payment_intent as string);
  t.is(intent.status, 'requires_payment_method');
  t.truthy(intent.last_payment_error);

  const [event] = await waitFor('the async failure', () => {
    const events = receiver.accepted('checkout.session.async_payment_failed');
    return events.length > 0 && events;
  });
  t.is((event.data.object as Stripe.Checkout.Session).id, session.id);
});

test('settling a delayed payment that was never started is refused', async (t) => {
  const harness = await startHarness(t);
  const session = await harness.stripe.checkout.sessions.create(sessionParams());
  const refused = await pay(harness, session.id, 'async_succeeded');
  t.is(refused.status, 400);
  t.is(refused.problem.code, 'no_pending_async_payment');
  t.is(refused.problem.status, 400);
});

test('a completed session cannot be paid twice', async (t) => {
  const harness = await startHarness(t);
  const session = await harness.stripe.checkout.sessions.create(sessionParams());
  await pay(harness, session.id, 'succeeded');
  const again = await pay(harness, session.id, 'succeeded', { force: true });
  t.is(again.status, 400);
  t.is(again.problem.code, 'session_complete');
});

test('paying an unknown session or with an unknown outcome is a problem response', async (t) => {
  const harness = await startHarness(t);
  const missing = await pay(harness, 'cs_test_missing', 'succeeded');
  t.is(missing.status, 404);
  t.is(missing.problem.code, 'session_not_found');
  const session = await harness.stripe.checkout.sessions.create(sessionParams());
  const unknown = await pay(harness, session.id, 'maybe');
  t.is(unknown.status, 400);
  t.is(unknown.problem.code, 'invalid_outcome');
});

test('a full refund succeeds once and a second full refund is charge_already_refunded', async (t) => {
  const harness = await startHarness(t);
  const { stripe, receiver } = harness;
  const session = await stripe.checkout.sessions.create(sessionParams());
  const intentId = (await pay(harness, session.id, 'succeeded')).session.payment_intent as string;

  const refund = await stripe.refunds.create({
    payment_intent: intentId,
    reason: 'requested_by_customer',
    metadata: { purchase_id: 'p_1' },
  });
  t.regex(refund.id, /^re_/);
  t.is(refund.object, 'refund');
  t.is(refund.status, 'succeeded');
  t.is(refund.amount, 3000);
  t.is(refund.payment_intent, intentId);
  t.is(refund.reason, 'requested_by_customer');
  t.deepEqual(refund.metadata, { purchase_id: 'p_1' });
  t.is((await stripe.refunds.retrieve(refund.id)).id, refund.id);

  const error = await t.throwsAsync(stripe.refunds.create({ payment_intent: intentId }), {
    instanceOf: Stripe.errors.StripeInvalidRequestError,
  });
  t.is(error?.statusCode, 400);
  t.is(error?.code, 'charge_already_refunded');

  const types = await waitFor('the refund events', () => {
    const accepted = receiver.accepted().map((e) => e.type);
    return accepted.length === 3 && accepted;
  });
  t.deepEqual(types, ['checkout.session.completed', 'refund.created', 'charge.refunded']);
  const charge = receiver.accepted('charge.refunded')[0].data.object as Stripe.Charge;
  t.is(charge.amount_refunded, 3000);
  t.true(charge.refunded);
});

test('partial refunds cannot exceed what remains on the charge', async (t) => {
  const harness = await startHarness(t);
  const { stripe } = harness;
  const session = await stripe.checkout.sessions.create(sessionParams());
  const intentId = (await pay(harness, session.id, 'succeeded')).session.payment_intent as string;

  t.is((await stripe.refunds.create({ payment_intent: intentId, amount: 1000 })).amount, 1000);
  const tooLarge = await t.throwsAsync(stripe.refunds.create({ payment_intent: intentId, amount: 2500 }), {
    instanceOf: Stripe.errors.StripeInvalidRequestError,
  });
  t.is(tooLarge?.code, 'amount_too_large');
  t.is(tooLarge?.param, 'amount');
  t.is((await stripe.refunds.create({ payment_intent: intentId })).amount, 2000);
  const list = await stripe.refunds.list({ payment_intent: intentId });
  t.deepEqual(
    list.data.map((r) => r.amount),
    [2000, 1000],
  );
});

test('a payment that did not succeed cannot be refunded', async (t) => {
  const harness = await startHarness(t);
  const { stripe } = harness;
  const session = await stripe.checkout.sessions.create(sessionParams());
  const intentId = (await pay(harness, session.id, 'declined')).session.payment_intent as string;
  const error = await t.throwsAsync(stripe.refunds.create({ payment_intent: intentId }), {
    instanceOf: Stripe.errors.StripeInvalidRequestError,
  });
  t.is(error?.code, 'payment_intent_unexpected_state');

  const missing = await t.throwsAsync(stripe.refunds.create({ payment_intent: 'pi_missing' }), {
    instanceOf: Stripe.errors.StripeInvalidRequestError,
  });
  t.is(missing?.statusCode, 404);
  t.is(missing?.code, 'resource_missing');
  t.is(missing?.param, 'payment_intent');
});

test('a session can be retrieved with its payment intent expanded', async (t) => {
  const harness = await startHarness(t);
  const session = await harness.stripe.checkout.sessions.create(sessionParams());
  await pay(harness, session.id, 'succeeded');
  const expanded = await harness.stripe.checkout.sessions.retrieve(session.id, {
    expand: ['payment_intent.latest_charge'],
  });
  const intent = expanded.payment_intent as Stripe.PaymentIntent;
  t.is(intent.object, 'payment_intent');
  t.is((intent.latest_charge as Stripe.Charge).status, 'succeeded');
});

test('an expired session cancels the payment intent a declined buyer left behind', async (t) => {
  const harness = await startHarness(t);
  const session = await harness.stripe.checkout.sessions.create(sessionParams());
  const intentId = (await pay(harness, session.id, 'declined')).session.payment_intent as string;
  await harness.stripe.checkout.sessions.expire(session.id);
  t.is((await harness.stripe.paymentIntents.retrieve(intentId)).status, 'canceled');
});

test('a delayed payment that fails also sends payment_intent.payment_failed, as Stripe does', async (t) => {
  const harness = await startHarness(t);
  const { stripe, receiver } = harness;
  const session = await stripe.checkout.sessions.create(sessionParams());
  await pay(harness, session.id, 'async_pending');
  await pay(harness, session.id, 'async_failed');

  const types = await waitFor('three events', () => receiver.accepted().length === 3 && receiver.accepted());
  t.deepEqual(
    types.map((e) => e.type),
    ['checkout.session.completed', 'payment_intent.payment_failed', 'checkout.session.async_payment_failed'],
  );
  const intent = receiver.accepted('payment_intent.payment_failed')[0].data.object as Stripe.PaymentIntent;
  t.is(intent.id, (await stripe.checkout.sessions.retrieve(session.id)).payment_intent as string);
  t.is(intent.status, 'requires_payment_method');
  t.deepEqual(intent.metadata, { purchase_id: 'p_1' });
  t.is(intent.last_payment_error?.code, 'insufficient_funds');
});

test('the card fingerprint given at payment is on the latest charge, retrievable with expand', async (t) => {
  const harness = await startHarness(t);
  const { stripe } = harness;
  const session = await stripe.checkout.sessions.create(sessionParams());
  const paid = await pay(harness, session.id, 'succeeded', { card: { fingerprint: 'Xt5EWLLDS7FJjR1c' } });
  t.is(paid.status, 200);

  const intent = await stripe.paymentIntents.retrieve(paid.session.payment_intent as string, {
    expand: ['latest_charge'],
  });
  const charge = intent.latest_charge as Stripe.Charge;
  t.is(charge.object, 'charge');
  t.is(charge.payment_method_details?.type, 'card');
  t.is(charge.payment_method_details?.card?.fingerprint, 'Xt5EWLLDS7FJjR1c');
  t.is(charge.payment_method_details?.card?.last4, '4242');
  t.is(charge.payment_method_details?.card?.brand, 'visa');
  t.is((await stripe.charges.retrieve(charge.id)).payment_method_details?.card?.fingerprint, 'Xt5EWLLDS7FJjR1c');

  // A delayed payment keeps the card it was started with.
  const delayed = await stripe.checkout.sessions.create(sessionParams());
  await pay(harness, delayed.id, 'async_pending', { card: { fingerprint: 'delayedCard01' } });
  const settled = await pay(harness, delayed.id, 'async_succeeded');
  const delayedIntent = await stripe.paymentIntents.retrieve(settled.session.payment_intent as string, {
    expand: ['latest_charge'],
  });
  t.is((delayedIntent.latest_charge as Stripe.Charge).payment_method_details?.card?.fingerprint, 'delayedCard01');
});

test('without a card the fingerprint is the session’s own: the same on every try, another on another session', async (t) => {
  const harness = await startHarness(t);
  const { stripe } = harness;
  const fingerprintOf = async (intentId: string): Promise<string> => {
    const intent = await stripe.paymentIntents.retrieve(intentId, { expand: ['latest_charge'] });
    return (intent.latest_charge as Stripe.Charge).payment_method_details?.card?.fingerprint ?? '';
  };
  const session = await stripe.checkout.sessions.create(sessionParams());
  const declined = await pay(harness, session.id, 'declined');
  const first = await fingerprintOf(declined.session.payment_intent as string);
  t.regex(first, /^[A-Za-z0-9]{16}$/);
  const paid = await pay(harness, session.id, 'succeeded');
  t.is(await fingerprintOf(paid.session.payment_intent as string), first);

  const other = await stripe.checkout.sessions.create(sessionParams());
  const otherPaid = await pay(harness, other.id, 'succeeded');
  t.not(await fingerprintOf(otherPaid.session.payment_intent as string), first);
});

test('a card is refused on outcomes that make no charge, and a malformed one anywhere', async (t) => {
  const harness = await startHarness(t);
  const session = await harness.stripe.checkout.sessions.create(sessionParams());
  await pay(harness, session.id, 'async_pending');
  const settling = await pay(harness, session.id, 'async_succeeded', { card: { fingerprint: 'abc' } });
  t.is(settling.status, 400);
  t.is(settling.problem.code, 'invalid_card');
  const other = await harness.stripe.checkout.sessions.create(sessionParams());
  for (const card of ['abc', { fingerprint: 42 }, { fingerPrint: 'abc' }, { fingerprint: 'has spaces' }]) {
    const refused = await pay(harness, other.id, 'succeeded', { card });
    t.is(refused.status, 400, JSON.stringify(card));
    t.is(refused.problem.code, 'invalid_card');
  }
});
