import test from 'ava';
import Stripe from 'stripe';

import { WEBHOOK_SECRET, acceptedTypes, nowSeconds, pay, sessionParams, startHarness, stripeFor } from './harness';

// Stripe accepts any Checkout Session an account's keys create: another app on the same account may
// open sessions with metadata of its own, and the service receives their events too.

test('another app’s session, with someone else’s purchase_id and amount, is paid and reported like any other', async (t) => {
  const harness = await startHarness(t);
  const otherApp = stripeFor(harness.emulator, 'sk_test_another_app_on_this_account');
  const session = await otherApp.checkout.sessions.create({
    mode: 'payment',
    line_items: [
      { quantity: 1, price_data: { currency: 'eur', unit_amount: 4321, product_data: { name: 'Gift card' } } },
    ],
    success_url: 'https://other-app.test/thanks',
    expires_at: nowSeconds() + 60 * 60,
    client_reference_id: 'order-7',
    metadata: { purchase_id: 'pur_belongs_to_someone_else', source: 'other-app' },
    payment_intent_data: { metadata: { purchase_id: 'pur_belongs_to_someone_else' } },
  });
  t.is(session.amount_total, 4321);

  const paid = await pay(harness, session.id, 'succeeded');
  t.is(paid.status, 200);
  t.is(paid.session.payment_status, 'paid');

  t.deepEqual(await acceptedTypes(harness, 1), ['checkout.session.completed']);
  const [delivery] = harness.receiver.received;
  t.is(delivery.verifyError, null);
  const event = harness.stripe.webhooks.constructEvent(delivery.rawBody, delivery.signature, WEBHOOK_SECRET);
  const object = event.data.object as Stripe.Checkout.Session;
  t.is(object.id, session.id);
  t.is(object.amount_total, 4321);
  t.is(object.currency, 'eur');
  t.is(object.client_reference_id, 'order-7');
  t.deepEqual(object.metadata, { purchase_id: 'pur_belongs_to_someone_else', source: 'other-app' });
  t.is(event.request?.id, null);

  // Every key of the account sees the same objects.
  const intent = await harness.stripe.paymentIntents.retrieve(object.payment_intent as string);
  t.is(intent.amount, 4321);
  t.deepEqual(intent.metadata, { purchase_id: 'pur_belongs_to_someone_else' });
});

test('restricted test keys work; live and malformed keys are refused as Stripe refuses an unknown key', async (t) => {
  const harness = await startHarness(t);
  const restricted = stripeFor(harness.emulator, 'rk_test_reporting_app');
  t.regex((await restricted.checkout.sessions.create(sessionParams())).id, /^cs_test_/);

  for (const key of ['sk_live_looks_real_but_this_is_test_mode', 'pk_test_publishable', 'not-a-key']) {
    const error = await t.throwsAsync(stripeFor(harness.emulator, key).checkout.sessions.create(sessionParams()), {
      instanceOf: Stripe.errors.StripeAuthenticationError,
    });
    t.is(error?.statusCode, 401, key);
  }
});

test('the same idempotency key from two callers opens two sessions', async (t) => {
  const harness = await startHarness(t);
  const params = sessionParams();
  const ours = await harness.stripe.checkout.sessions.create(params, { idempotencyKey: 'checkout-p_1' });
  const theirs = await stripeFor(harness.emulator, 'sk_test_other_app').checkout.sessions.create(params, {
    idempotencyKey: 'checkout-p_1',
  });
  t.not(ours.id, theirs.id);
  const again = await harness.stripe.checkout.sessions.create(params, { idempotencyKey: 'checkout-p_1' });
  t.is(again.id, ours.id);
});
