import test from 'ava';
import Stripe from 'stripe';

import { type ProblemBody, acceptedTypes, paidIntent, startHarness, waitFor } from './harness';

test('with refundStatus pending a refund starts pending, then settles with refund.updated and charge.refunded', async (t) => {
  const harness = await startHarness(t, { refundStatus: 'pending' });
  const { stripe, receiver, control } = harness;
  const intentId = await paidIntent(harness);

  const refund = await stripe.refunds.create({ payment_intent: intentId, metadata: { purchase_id: 'p_1' } });
  t.is(refund.status, 'pending');
  t.is(refund.pending_reason, 'processing');
  t.deepEqual(await acceptedTypes(harness, 2), ['checkout.session.completed', 'refund.created']);
  // What a pending refund takes counts against the charge at once: nothing is left to refund.
  const charge = await stripe.charges.retrieve(refund.charge as string);
  t.is(charge.amount_refunded, 3000);
  const twice = await t.throwsAsync(stripe.refunds.create({ payment_intent: intentId }), {
    instanceOf: Stripe.errors.StripeInvalidRequestError,
  });
  t.is(twice?.code, 'charge_already_refunded');

  const settled = await control<Stripe.Refund>('POST', `/_emulator/refunds/${refund.id}/succeed`);
  t.is(settled.status, 200);
  t.is(settled.body.status, 'succeeded');
  t.is(settled.body.pending_reason, undefined);
  t.deepEqual(await acceptedTypes(harness, 4), [
    'checkout.session.completed',
    'refund.created',
    'refund.updated',
    'charge.refunded',
  ]);
  const [updated] = receiver.accepted('refund.updated');
  t.is((updated.data.object as Stripe.Refund).status, 'succeeded');
  t.deepEqual((updated.data.object as Stripe.Refund).metadata, { purchase_id: 'p_1' });
  t.deepEqual(updated.data.previous_attributes, { status: 'pending', pending_reason: 'processing' });
  const refunded = receiver.accepted('charge.refunded')[0].data.object as Stripe.Charge;
  t.true(refunded.refunded);
  t.is((await stripe.refunds.retrieve(refund.id)).status, 'succeeded');
});

test('a failed refund sends refund.updated and refund.failed and gives its amount back to the charge', async (t) => {
  const harness = await startHarness(t);
  const { stripe, receiver, control } = harness;
  const intentId = await paidIntent(harness);
  const refund = await stripe.refunds.create({ payment_intent: intentId, amount: 1200 });
  t.is(refund.status, 'succeeded');
  await acceptedTypes(harness, 3);

  const failed = await control<Stripe.Refund>('POST', `/_emulator/refunds/${refund.id}/fail`, {
    failure_reason: 'lost_or_stolen_card',
  });
  t.is(failed.status, 200);
  t.is(failed.body.status, 'failed');
  t.is(failed.body.failure_reason, 'lost_or_stolen_card');
  t.deepEqual(await acceptedTypes(harness, 5), [
    'checkout.session.completed',
    'refund.created',
    'charge.refunded',
    'refund.updated',
    'refund.failed',
  ]);
  const updated = receiver.accepted('refund.updated')[0];
  t.is((updated.data.object as Stripe.Refund).status, 'failed');
  t.is((updated.data.previous_attributes as Partial<Stripe.Refund>).status, 'succeeded');
  t.is((receiver.accepted('refund.failed')[0].data.object as Stripe.Refund).id, refund.id);

  const charge = await stripe.charges.retrieve(refund.charge as string);
  t.is(charge.amount_refunded, 0);
  t.false(charge.refunded);
  // The whole amount can be refunded again.
  t.is((await stripe.refunds.create({ payment_intent: intentId })).amount, 3000);
});

test('a pending refund that fails never sends charge.refunded', async (t) => {
  const harness = await startHarness(t, { refundStatus: 'pending' });
  const intentId = await paidIntent(harness);
  const refund = await harness.stripe.refunds.create({ payment_intent: intentId });
  const failed = await harness.control<Stripe.Refund>('POST', `/_emulator/refunds/${refund.id}/fail`);
  t.is(failed.body.failure_reason, 'expired_or_canceled_card');
  t.deepEqual(await acceptedTypes(harness, 4), [
    'checkout.session.completed',
    'refund.created',
    'refund.updated',
    'refund.failed',
  ]);
  await new Promise((resolve) => setTimeout(resolve, 150));
  t.deepEqual(harness.receiver.accepted('charge.refunded'), []);
  const charge = await harness.stripe.charges.retrieve(refund.charge as string);
  t.is(charge.amount_refunded, 0);
});

test('how refunds start can be switched at run time through /_emulator/settings', async (t) => {
  const harness = await startHarness(t);
  const { stripe, control } = harness;
  t.deepEqual((await control('GET', '/_emulator/settings')).body, { refundStatus: 'succeeded' });
  const intentId = await paidIntent(harness);

  t.deepEqual((await control('POST', '/_emulator/settings', { refundStatus: 'pending' })).body, {
    refundStatus: 'pending',
  });
  t.is((await stripe.refunds.create({ payment_intent: intentId, amount: 100 })).status, 'pending');
  await control('POST', '/_emulator/settings', { refundStatus: 'succeeded' });
  t.is((await stripe.refunds.create({ payment_intent: intentId, amount: 100 })).status, 'succeeded');

  const invalid = await control<ProblemBody>('POST', '/_emulator/settings', { refundStatus: 'later' });
  t.is(invalid.status, 400);
  t.is(invalid.body.code, 'invalid_refundStatus');
  // A reset goes back to how the emulator was started.
  await control('POST', '/_emulator/settings', { refundStatus: 'pending' });
  await control('POST', '/_emulator/reset');
  t.deepEqual((await control('GET', '/_emulator/settings')).body, { refundStatus: 'succeeded' });
});

test('settling or failing a refund in the wrong state, or an unknown one, is a problem response', async (t) => {
  const harness = await startHarness(t);
  const { stripe, control } = harness;
  const intentId = await paidIntent(harness);
  const refund = await stripe.refunds.create({ payment_intent: intentId });

  const notPending = await control<ProblemBody>('POST', `/_emulator/refunds/${refund.id}/succeed`);
  t.is(notPending.status, 400);
  t.is(notPending.body.code, 'refund_not_pending');
  await control('POST', `/_emulator/refunds/${refund.id}/fail`);
  const again = await control<ProblemBody>('POST', `/_emulator/refunds/${refund.id}/fail`);
  t.is(again.status, 400);
  t.is(again.body.code, 'refund_not_failable');
  const missing = await control<ProblemBody>('POST', '/_emulator/refunds/re_missing/fail');
  t.is(missing.status, 404);
  t.is(missing.body.code, 'refund_not_found');
  const badReason = await control<ProblemBody>('POST', `/_emulator/refunds/${refund.id}/fail`, {
    failure_reason: 'bored',
  });
  t.is(badReason.status, 400);
});

test('a Dashboard refund has no metadata and sends refund.created and charge.refunded', async (t) => {
  const harness = await startHarness(t);
  const { stripe, receiver, control } = harness;
  const intentId = await paidIntent(harness);

  const partial = await control<Stripe.Refund>('POST', `/_emulator/payment_intents/${intentId}/refund`, {
    amount: 1000,
  });
  t.is(partial.status, 200);
  t.regex(partial.body.id, /^re_/);
  t.is(partial.body.amount, 1000);
  t.deepEqual(partial.body.metadata, {});
  t.is(partial.body.reason, null);
  t.is(partial.body.payment_intent, intentId);
  t.deepEqual(await acceptedTypes(harness, 3), ['checkout.session.completed', 'refund.created', 'charge.refunded']);
  const created = receiver.accepted('refund.created')[0];
  t.is(created.request?.idempotency_key, null);
  t.regex(created.request?.id ?? '', /^req_/);
  t.is((receiver.accepted('charge.refunded')[0].data.object as Stripe.Charge).amount_refunded, 1000);

  // The service sees it through the API as well, beside its own refunds.
  const listed = await stripe.refunds.list({ payment_intent: intentId });
  t.deepEqual(
    listed.data.map((r) => r.id),
    [partial.body.id],
  );

  // Without an amount, the rest; then nothing is left, and Stripe's code says so.
  const rest = await control<Stripe.Refund>('POST', `/_emulator/payment_intents/${intentId}/refund`, {
    reason: 'requested_by_customer',
  });
  t.is(rest.body.amount, 2000);
  t.is(rest.body.reason, 'requested_by_customer');
  const none = await control<ProblemBody>('POST', `/_emulator/payment_intents/${intentId}/refund`);
  t.is(none.status, 400);
  t.is(none.body.code, 'charge_already_refunded');
  const unknown = await control<ProblemBody>('POST', '/_emulator/payment_intents/pi_missing/refund');
  t.is(unknown.status, 404);
  t.is(unknown.body.code, 'resource_missing');
});

test('a Dashboard refund made while refunds start pending settles like any other', async (t) => {
  const harness = await startHarness(t, { refundStatus: 'pending' });
  const intentId = await paidIntent(harness);
  const refund = await harness.control<Stripe.Refund>('POST', `/_emulator/payment_intents/${intentId}/refund`);
  t.is(refund.body.status, 'pending');
  await harness.control('POST', `/_emulator/refunds/${refund.body.id}/succeed`);
  const types = await waitFor('the settlement events', () => {
    const accepted = harness.receiver.accepted().map((e) => e.type);
    return accepted.length === 4 && accepted;
  });
  t.deepEqual(types, ['checkout.session.completed', 'refund.created', 'refund.updated', 'charge.refunded']);
});
