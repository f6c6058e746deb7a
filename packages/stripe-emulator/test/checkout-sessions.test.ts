import test from 'ava';
import Stripe from 'stripe';

import { type EmulatorEvents, nowSeconds, pay, sessionParams, startHarness, stripeFor, waitFor } from './harness';

test('creating a session returns an open, unpaid Stripe session with a hosted page URL', async (t) => {
  const { stripe, emulator } = await startHarness(t);
  const expiresAt = nowSeconds() + 45 * 60;
  const session = await stripe.checkout.sessions.create(sessionParams({ expires_at: expiresAt }));

  t.regex(session.id, /^cs_test_[A-Za-z0-9]{58}$/);
  t.is(session.object, 'checkout.session');
  t.is(session.status, 'open');
  t.is(session.payment_status, 'unpaid');
  t.is(session.mode, 'payment');
  t.is(session.payment_intent, null);
  t.is(session.amount_total, 3000);
  t.is(session.currency, 'usd');
  t.is(session.expires_at, expiresAt);
  t.is(session.livemode, false);
  t.is(session.client_reference_id, 'p_1');
  t.deepEqual(session.metadata, { purchase_id: 'p_1' });
  t.is(session.success_url, 'http://shop.test/purchases/p_1/done?session_id={CHECKOUT_SESSION_ID}');
  t.is(session.cancel_url, 'http://shop.test/purchases/p_1/cancelled');
  t.is(session.url, `${emulator.url}/checkout/${session.id}`);
  t.true(Math.abs(session.created - nowSeconds()) <= 2);
  t.regex(session.lastResponse.requestId, /^req_/);
});

test('an expires_at less than 30 minutes away is refused on the expires_at param', async (t) => {
  const { stripe } = await startHarness(t);
  const error = await t.throwsAsync(
    stripe.checkout.sessions.create(sessionParams({ expires_at: nowSeconds() + 29 * 60 })),
    { instanceOf: Stripe.errors.StripeInvalidRequestError },
  );
  t.is(error?.statusCode, 400);
  t.is(error?.param, 'expires_at');
  t.is(error?.message, 'The `expires_at` timestamp must be at least 30 minutes from Checkout Session creation.');
});

test('an expires_at more than 24 hours away is refused on the expires_at param', async (t) => {
  const { stripe } = await startHarness(t);
  const error = await t.throwsAsync(
    stripe.checkout.sessions.create(sessionParams({ expires_at: nowSeconds() + 24 * 3600 + 60 })),
    { instanceOf: Stripe.errors.StripeInvalidRequestError },
  );
  t.is(error?.param, 'expires_at');
  t.is(error?.message, 'The `expires_at` timestamp must be less than 24 hours from Checkout Session creation.');
});

test('a session without expires_at expires 24 hours after creation', async (t) => {
  const { stripe } = await startHarness(t);
  const session = await stripe.checkout.sessions.create(sessionParams({ expires_at: undefined }));
  t.is(session.expires_at - session.created, 24 * 3600);
});

test('missing required params are refused with the param named', async (t) => {
  const { stripe } = await startHarness(t);
  const noItems = await t.throwsAsync(stripe.checkout.sessions.create(sessionParams({ line_items: undefined })), {
    instanceOf: Stripe.errors.StripeInvalidRequestError,
  });
  t.is(noItems?.param, 'line_items');

  const noQuantity = await t.throwsAsync(
    stripe.checkout.sessions.create(
      sessionParams({
        line_items: [{ price_data: { currency: 'usd', unit_amount: 100, product_data: { name: 'x' } } }],
      }),
    ),
    { instanceOf: Stripe.errors.StripeInvalidRequestError },
  );
  t.is(noQuantity?.param, 'line_items[0][quantity]');
  t.is(noQuantity?.code, 'parameter_missing');

  const noMode = await t.throwsAsync(stripe.checkout.sessions.create(sessionParams({ mode: undefined })), {
    instanceOf: Stripe.errors.StripeInvalidRequestError,
  });
  t.is(noMode?.param, 'mode');
});

test('unknown params are refused like Stripe refuses them', async (t) => {
  const { stripe } = await startHarness(t);
  const params = { ...sessionParams(), colour: 'red' } as Stripe.Checkout.SessionCreateParams;
  const error = await t.throwsAsync(stripe.checkout.sessions.create(params), {
    instanceOf: Stripe.errors.StripeInvalidRequestError,
  });
  t.is(error?.param, 'colour');
  t.is(error?.message, 'Received unknown parameter: colour');
});

test('amount_total sums every line item', async (t) => {
  const { stripe } = await startHarness(t);
  const session = await stripe.checkout.sessions.create(
    sessionParams({
      line_items: [
        { quantity: 1, price_data: { currency: 'eur', unit_amount: 999, product_data: { name: 'Cap' } } },
        { quantity: 3, price_data: { currency: 'eur', unit_amount: 250, product_data: { name: 'Socks' } } },
      ],
    }),
  );
  t.is(session.amount_total, 1749);
  t.is(session.currency, 'eur');
  const withItems = await stripe.checkout.sessions.retrieve(session.id, { expand: ['line_items'] });
  t.deepEqual(
    withItems.line_items?.data.map((item) => [item.description, item.quantity, item.amount_total]),
    [
      ['Cap', 1, 999],
      ['Socks', 3, 750],
    ],
  );
});

test('retrieving a session returns its current state', async (t) => {
  const { stripe } = await startHarness(t);
  const created = await stripe.checkout.sessions.create(sessionParams());
  const retrieved = await stripe.checkout.sessions.retrieve(created.id);
  t.is(retrieved.id, created.id);
  t.is(retrieved.status, 'open');
  t.deepEqual(retrieved.metadata, created.metadata);
  t.is(retrieved.line_items, undefined);
});

test('retrieving an unknown session is a 404 resource_missing on the id param', async (t) => {
  const { stripe } = await startHarness(t);
  const error = await t.throwsAsync(stripe.checkout.sessions.retrieve('cs_test_missing'), {
    instanceOf: Stripe.errors.StripeInvalidRequestError,
  });
  t.is(error?.statusCode, 404);
  t.is(error?.code, 'resource_missing');
  t.is(error?.param, 'id');
  t.is(error?.message, "No such checkout.session: 'cs_test_missing'");
});

test('sessions can be listed by payment_intent', async (t) => {
  const harness = await startHarness(t);
  const { stripe } = harness;
  const paid = await stripe.checkout.sessions.create(sessionParams());
  await stripe.checkout.sessions.create(sessionParams());
  const { session } = await pay(harness, paid.id, 'succeeded');
  const list = await stripe.checkout.sessions.list({ payment_intent: session.payment_intent as string });
  t.deepEqual(
    list.data.map((s) => s.id),
    [paid.id],
  );
});

test('expiring an open session marks it expired and sends checkout.session.expired', async (t) => {
  const { stripe, receiver } = await startHarness(t);
  const session = await stripe.checkout.sessions.create(sessionParams());
  const expired = await stripe.checkout.sessions.expire(session.id, {}, { idempotencyKey: 'expire-p_1' });
  t.is(expired.status, 'expired');
  t.is(expired.url, null);

  const [event] = await waitFor('the expired event', () => {
    const events = receiver.accepted('checkout.session.expired');
    return events.length > 0 && events;
  });
  const object = event.data.object as Stripe.Checkout.Session;
  t.is(object.id, session.id);
  t.is(object.status, 'expired');
  t.is(event.request?.id, expired.lastResponse.requestId);
  t.is(event.request?.idempotency_key, 'expire-p_1');
});

test('expiring a session the buyer already paid fails with the open-only error', async (t) => {
  const harness = await startHarness(t);
  const session = await harness.stripe.checkout.sessions.create(sessionParams());
  t.is((await pay(harness, session.id, 'succeeded')).status, 200);

  const error = await t.throwsAsync(harness.stripe.checkout.sessions.expire(session.id), {
    instanceOf: Stripe.errors.StripeInvalidRequestError,
  });
  t.is(error?.statusCode, 400);
  t.is(error?.type, 'StripeInvalidRequestError');
  t.is(error?.message, 'Only Checkout Sessions with a status in ["open"] can be expired.');
  const after = await harness.stripe.checkout.sessions.retrieve(session.id);
  t.is(after.status, 'complete');
});

test('a session expires by itself once its expires_at passes', async (t) => {
  let skewMs = 0;
  const { stripe, receiver } = await startHarness(t, { now: () => Date.now() + skewMs, expirySweepMs: 20 });
  const session = await stripe.checkout.sessions.create(sessionParams({ expires_at: nowSeconds() + 31 * 60 }));
  t.is(receiver.received.length, 0);

  skewMs = 32 * 60 * 1000;
  const [event] = await waitFor('the sweep to expire the session', () => {
    const events = receiver.accepted('checkout.session.expired');
    return events.length > 0 && events;
  });
  t.is((event.data.object as Stripe.Checkout.Session).id, session.id);
  t.is(event.request?.id, null);
  const retrieved = await stripe.checkout.sessions.retrieve(session.id);
  t.is(retrieved.status, 'expired');
});

test('a lapsed session cannot be paid, unless force simulates a payment that raced the expiry', async (t) => {
  const harness = await startHarness(t);
  const session = await harness.stripe.checkout.sessions.create(sessionParams());
  t.is((await harness.control('POST', `/_emulator/sessions/${session.id}/lapse`)).status, 200);

  const refused = await pay(harness, session.id, 'succeeded');
  t.is(refused.status, 400);
  t.is(refused.problem.code, 'session_expired');

  const forced = await pay(harness, session.id, 'succeeded', { force: true });
  t.is(forced.status, 200);
  t.is(forced.session.status, 'complete');
  t.is(forced.session.payment_status, 'paid');
  const events = await waitFor('expired then completed', () => {
    const accepted = harness.receiver.accepted();
    return accepted.length >= 2 && accepted;
  });
  t.deepEqual(
    events.map((e) => e.type),
    ['checkout.session.expired', 'checkout.session.completed'],
  );
});

test('every API call needs a test-mode secret key', async (t) => {
  const { emulator } = await startHarness(t);
  const anonymous = await fetch(`${emulator.url}/v1/checkout/sessions/cs_test_x`);
  t.is(anonymous.status, 401);
  t.is(((await anonymous.json()) as { error: { type: string } }).error.type, 'invalid_request_error');

  const error = await t.throwsAsync(stripeFor(emulator, 'sk_live_nope').checkout.sessions.retrieve('cs_test_x'), {
    instanceOf: Stripe.errors.StripeAuthenticationError,
  });
  t.is(error?.statusCode, 401);
});

test('responses carry a Request-Id and echo the Stripe-Version asked for', async (t) => {
  const { emulator } = await startHarness(t);
  const res = await fetch(`${emulator.url}/v1/checkout/sessions?limit=1`, {
    headers: { Authorization: 'Bearer sk_test_emulator', 'Stripe-Version': '2024-06-20' },
  });
  t.is(res.status, 200);
  t.regex(res.headers.get('request-id') ?? '', /^req_[A-Za-z0-9]{14}$/);
  t.is(res.headers.get('stripe-version'), '2024-06-20');
});

test('events are recorded without a webhook URL and delivered once one is set', async (t) => {
  const { stripe, receiver, emulator, control } = await startHarness(t, { connectWebhooks: false });
  const session = await stripe.checkout.sessions.create(sessionParams());
  await stripe.checkout.sessions.expire(session.id);
  const before = await control<EmulatorEvents>('GET', '/_emulator/events');
  t.deepEqual(
    before.body.data.map((e) => [e.type, e.delivered]),
    [['checkout.session.expired', false]],
  );

  emulator.setWebhookUrl(receiver.url);
  await waitFor('the held event', () => receiver.accepted('checkout.session.expired').length === 1);
  t.pass();
});
