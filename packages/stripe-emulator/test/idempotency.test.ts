import test from 'ava';
import Stripe from 'stripe';

import { pay, sessionParams, startHarness } from './harness';

test('the same idempotency key with the same params replays the first response', async (t) => {
  const { stripe } = await startHarness(t);
  const params = sessionParams();
  const first = await stripe.checkout.sessions.create(params, { idempotencyKey: 'open-checkout-p_1' });
  const second = await stripe.checkout.sessions.create(params, { idempotencyKey: 'open-checkout-p_1' });
  t.is(second.id, first.id);
  t.deepEqual({ ...second }, { ...first });
  t.is(second.lastResponse.headers['idempotent-replayed'], 'true');
  t.is(second.lastResponse.headers['original-request'], first.lastResponse.requestId);
  t.false('idempotent-replayed' in first.lastResponse.headers);
  const list = await stripe.checkout.sessions.list();
  t.is(list.data.length, 1);
});

test('the same idempotency key with different params is an idempotency_error', async (t) => {
  const { stripe } = await startHarness(t);
  await stripe.checkout.sessions.create(sessionParams(), { idempotencyKey: 'open-checkout-p_2' });
  const error = await t.throwsAsync(
    stripe.checkout.sessions.create(sessionParams({ client_reference_id: 'p_other' }), {
      idempotencyKey: 'open-checkout-p_2',
    }),
    { instanceOf: Stripe.errors.StripeIdempotencyError },
  );
  t.is(error?.statusCode, 400);
  t.is(error?.rawType, 'idempotency_error');
  t.true(
    error?.message.startsWith(
      'Keys for idempotent requests can only be used with the same parameters they were first used with.',
    ),
  );
});

test('idempotency keys are scoped per API key', async (t) => {
  const { stripe, emulator } = await startHarness(t);
  const other = new Stripe('sk_test_other_account', {
    host: '127.0.0.1',
    port: emulator.port,
    protocol: 'http',
    maxNetworkRetries: 0,
  });
  const mine = await stripe.checkout.sessions.create(sessionParams(), { idempotencyKey: 'shared-key' });
  const theirs = await other.checkout.sessions.create(sessionParams(), { idempotencyKey: 'shared-key' });
  t.not(theirs.id, mine.id);
});

test('a refused request is replayed with its original error', async (t) => {
  const harness = await startHarness(t);
  const { stripe } = harness;
  const session = await stripe.checkout.sessions.create(sessionParams());
  await pay(harness, session.id, 'succeeded');
  const first = await t.throwsAsync(stripe.checkout.sessions.expire(session.id, {}, { idempotencyKey: 'expire-1' }), {
    instanceOf: Stripe.errors.StripeInvalidRequestError,
  });
  const replay = await t.throwsAsync(stripe.checkout.sessions.expire(session.id, {}, { idempotencyKey: 'expire-1' }), {
    instanceOf: Stripe.errors.StripeInvalidRequestError,
  });
  t.is(replay?.message, first?.message);
  t.is(replay?.headers?.['idempotent-replayed'], 'true');
});

test('a refund retried with its idempotency key is not refunded twice', async (t) => {
  const harness = await startHarness(t);
  const { stripe } = harness;
  const session = await stripe.checkout.sessions.create(sessionParams());
  const intentId = (await pay(harness, session.id, 'succeeded')).session.payment_intent as string;
  const first = await stripe.refunds.create({ payment_intent: intentId }, { idempotencyKey: 'refund-p_1' });
  const again = await stripe.refunds.create({ payment_intent: intentId }, { idempotencyKey: 'refund-p_1' });
  t.is(again.id, first.id);
  t.is((await stripe.refunds.list({ payment_intent: intentId })).data.length, 1);
});

test('a validation failure is not stored, so the key can be used once the request is fixed', async (t) => {
  const { stripe } = await startHarness(t);
  const badRequest = sessionParams({ expires_at: Math.floor(Date.now() / 1000) + 60 });
  await t.throwsAsync(stripe.checkout.sessions.create(badRequest, { idempotencyKey: 'k-validation' }), {
    instanceOf: Stripe.errors.StripeInvalidRequestError,
  });
  const session = await stripe.checkout.sessions.create(sessionParams(), { idempotencyKey: 'k-validation' });
  t.is(session.status, 'open');
});
