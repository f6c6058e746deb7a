import test from 'ava';
import Stripe from 'stripe';

import { type ProblemBody, acceptedTypes, paidIntent, startHarness } from './harness';

test('a dispute on a payment sends charge.dispute.created and is retrievable in Stripe’s shape', async (t) => {
  const harness = await startHarness(t);
  const { stripe, receiver, control } = harness;
  const intentId = await paidIntent(harness);

  const opened = await control<Stripe.Dispute>('POST', `/_emulator/payment_intents/${intentId}/dispute`, {
    reason: 'product_not_received',
  });
  t.is(opened.status, 200);
  t.deepEqual(await acceptedTypes(harness, 3), [
    'checkout.session.completed',
    'charge.dispute.created',
    'charge.dispute.funds_withdrawn',
  ]);
  const event = receiver.accepted('charge.dispute.created')[0];
  const sent = event.data.object as Stripe.Dispute;
  t.regex(sent.id, /^dp_/);
  t.is(sent.object, 'dispute');
  t.is(sent.status, 'needs_response');
  t.is(sent.reason, 'product_not_received');
  t.is(sent.amount, 3000);
  t.is(sent.currency, 'usd');
  t.is(sent.payment_intent, intentId);
  t.false(sent.is_charge_refundable);
  t.is(sent.livemode, false);
  t.true((sent.evidence_details.due_by ?? 0) > event.created);
  t.is(sent.evidence_details.has_evidence, false);
  t.is(sent.evidence.customer_name, null);
  t.is(sent.payment_method_details?.type, 'card');
  t.is(sent.payment_method_details?.card?.case_type, 'chargeback');
  t.is(sent.network_reason_code, '13.1');

  const retrieved = await stripe.disputes.retrieve(sent.id, { expand: ['charge'] });
  t.is(retrieved.id, sent.id);
  const charge = retrieved.charge as Stripe.Charge;
  t.is(charge.object, 'charge');
  t.true(charge.disputed);
  t.is(charge.payment_intent, intentId);
  const listed = await stripe.disputes.list({ payment_intent: intentId });
  t.deepEqual(
    listed.data.map((d) => d.id),
    [sent.id],
  );
  const missing = await t.throwsAsync(stripe.disputes.retrieve('dp_missing'), {
    instanceOf: Stripe.errors.StripeInvalidRequestError,
  });
  t.is(missing?.code, 'resource_missing');
});

test('calling dispute again closes it lost; closing by id with won reinstates the funds', async (t) => {
  const harness = await startHarness(t);
  const { receiver, control } = harness;
  const lostIntent = await paidIntent(harness);
  const wonIntent = await paidIntent(harness);

  await control('POST', `/_emulator/payment_intents/${lostIntent}/dispute`);
  const lost = await control<Stripe.Dispute>('POST', `/_emulator/payment_intents/${lostIntent}/dispute`);
  t.is(lost.body.status, 'lost');
  t.is(lost.body.reason, 'fraudulent');

  const opened = await control<Stripe.Dispute>('POST', `/_emulator/payment_intents/${wonIntent}/dispute`);
  const won = await control<Stripe.Dispute>('POST', `/_emulator/disputes/${opened.body.id}/close`, {
    outcome: 'won',
  });
  t.is(won.body.status, 'won');
  t.true(won.body.is_charge_refundable);

  const types = await acceptedTypes(harness, 9);
  t.deepEqual(types.slice(2), [
    'charge.dispute.created',
    'charge.dispute.funds_withdrawn',
    'charge.dispute.closed',
    'charge.dispute.created',
    'charge.dispute.funds_withdrawn',
    'charge.dispute.closed',
    'charge.dispute.funds_reinstated',
  ]);
  t.deepEqual(
    receiver.accepted('charge.dispute.closed').map((e) => (e.data.object as Stripe.Dispute).status),
    ['lost', 'won'],
  );
  t.is((await harness.stripe.disputes.retrieve(opened.body.id)).status, 'won');

  const closedAgain = await control<ProblemBody>('POST', `/_emulator/payment_intents/${lostIntent}/dispute`);
  t.is(closedAgain.status, 400);
  t.is(closedAgain.body.code, 'dispute_closed');
  const noOutcome = await control<ProblemBody>('POST', `/_emulator/disputes/${opened.body.id}/close`);
  t.is(noOutcome.status, 400);
  t.is(noOutcome.body.code, 'invalid_outcome');
});

test('an outcome on the first call opens and closes the dispute at once', async (t) => {
  const harness = await startHarness(t);
  const intentId = await paidIntent(harness);
  const dispute = await harness.control<Stripe.Dispute>('POST', `/_emulator/payment_intents/${intentId}/dispute`, {
    reason: 'duplicate',
    outcome: 'lost',
  });
  t.is(dispute.body.status, 'lost');
  t.deepEqual((await acceptedTypes(harness, 4)).slice(1), [
    'charge.dispute.created',
    'charge.dispute.funds_withdrawn',
    'charge.dispute.closed',
  ]);
});

test('a disputed charge cannot be refunded until the dispute is won', async (t) => {
  const harness = await startHarness(t);
  const { stripe, control } = harness;
  const intentId = await paidIntent(harness);
  const dispute = await control<Stripe.Dispute>('POST', `/_emulator/payment_intents/${intentId}/dispute`);

  const refused = await t.throwsAsync(stripe.refunds.create({ payment_intent: intentId }), {
    instanceOf: Stripe.errors.StripeInvalidRequestError,
  });
  t.is(refused?.code, 'charge_disputed');
  const dashboard = await control<ProblemBody>('POST', `/_emulator/payment_intents/${intentId}/refund`);
  t.is(dashboard.status, 400);
  t.is(dashboard.body.code, 'charge_disputed');

  await control('POST', `/_emulator/disputes/${dispute.body.id}/close`, { outcome: 'won' });
  t.is((await stripe.refunds.create({ payment_intent: intentId })).status, 'succeeded');
});

test('accepting a dispute through the API closes it lost', async (t) => {
  const harness = await startHarness(t);
  const intentId = await paidIntent(harness);
  const dispute = await harness.control<Stripe.Dispute>('POST', `/_emulator/payment_intents/${intentId}/dispute`);
  const accepted = await harness.stripe.disputes.close(dispute.body.id, {}, { idempotencyKey: 'accept-1' });
  t.is(accepted.status, 'lost');
  const closed = (await acceptedTypes(harness, 4)).slice(-1);
  t.deepEqual(closed, ['charge.dispute.closed']);
  t.is(harness.receiver.accepted('charge.dispute.closed')[0].request?.idempotency_key, 'accept-1');
  const again = await t.throwsAsync(harness.stripe.disputes.close(dispute.body.id), {
    instanceOf: Stripe.errors.StripeInvalidRequestError,
  });
  t.is(again?.code, 'dispute_closed');
});

test('only a payment that succeeded can be disputed', async (t) => {
  const harness = await startHarness(t);
  const declined = await paidIntent(harness, 'declined');
  const refused = await harness.control<ProblemBody>('POST', `/_emulator/payment_intents/${declined}/dispute`);
  t.is(refused.status, 400);
  t.is(refused.body.code, 'no_successful_charge');
  const missing = await harness.control<ProblemBody>('POST', '/_emulator/payment_intents/pi_missing/dispute');
  t.is(missing.status, 404);
  t.is(missing.body.code, 'payment_intent_not_found');
  const badReason = await harness.control<ProblemBody>('POST', `/_emulator/payment_intents/${declined}/dispute`, {
    reason: 'vibes',
  });
  t.is(badReason.status, 400);
  t.is(badReason.body.code, 'invalid_reason');
});
