import test from 'ava';
import { WorkflowFailedError } from '@temporalio/client';
import { ActivityFailure, ApplicationFailure, CancelledFailure } from '@temporalio/common';
import type { RefundInput } from '../../../activities/stripe';
import { DISPUTE_ACTOR, type PurchaseState, type RefundEvent, type SupportRefundInput } from '../../../vocabulary';
import { supportRefundWorkflow } from '../../../workflows';
import { refundEventSignal, supportActionSignal } from '../../../workflows/definitions';
import { useFastTemporal } from '../helpers/temporal';
import { gate, idle, until } from '../helpers/wait';
import { refusal, type Case } from '../helpers/world';

// Support's refund of a confirmed order, with Stripe and Postgres answered from memory: the refund
// followed to its end (webhook or read), a refusal or a failure put before support, support's retry
// and settlement by hand, and the unit back on sale only once the money is back with the buyer.

const temporal = useFastTemporal(test);

function confirmed(c: Case, patch: Partial<PurchaseState> = {}): PurchaseState {
  const base: PurchaseState = {
    purchaseId: c.id,
    sku: 'hoodie',
    buyerId: `b-${c.id}`,
    quantity: 1,
    status: 'confirmed',
  };
  return { ...base, paymentIntentId: c.paymentIntentId, ...patch };
}

/** Starts support's refund of the case's purchase; `first` arrives with the start (as a webhook would). */
function refund(c: Case, input: Partial<SupportRefundInput> = {}, first?: RefundEvent) {
  const { env, taskQueue } = temporal();
  const args: [SupportRefundInput] = [
    { purchaseId: c.id, reason: 'wrong colour', restock: true, actor: 'ana', ...input },
  ];
  const options = { taskQueue, workflowId: `refund-${c.id}`, args };
  return first
    ? env.client.workflow.signalWithStart(supportRefundWorkflow, {
        ...options,
        signal: refundEventSignal,
        signalArgs: [first],
      })
    : env.client.workflow.start(supportRefundWorkflow, options);
}

const refundsMade = (c: Case) => c.calls.filter((x) => x.name === 'refundPayment').map((x) => x.args[0] as RefundInput);
const recorded = (c: Case) =>
  c.calls.filter((x) => x.name === 'recordPurchase').map((x) => x.args[1] as Partial<PurchaseState>);
const refundId = (c: Case, n: number) => `re_${c.id}_${n}`;
const settled = (note: string) => ({ action: 'settled' as const, actor: 'ana', note });

test('a support refund whose webhook says succeeded: refunded with Stripe’s refund, the unit back on sale, the buyer told once', async (t) => {
  const c = temporal().world.open();
  c.record = confirmed(c);
  const h = await refund(c, { note: 'asked twice by mail' }, { refundId: refundId(c, 1), status: 'succeeded' });
  const result = await h.result();
  const summary = { status: 'succeeded', reason: 'wrong colour', refundId: refundId(c, 1) };
  t.deepEqual(result, { purchaseId: c.id, outcome: 'refunded', refund: summary, restocked: true });
  t.like(c.record, { status: 'refunded', reason: 'wrong colour', refund: summary });
  t.deepEqual(c.names(), [
    'loadPurchase',
    'appendAudit',
    'refundPayment',
    'recordPurchase',
    'restockSale',
    'recordPurchase',
    'appendAudit',
    'notifyBuyer',
  ]);
  t.like(refundsMade(c)[0], { purchaseId: c.id, paymentIntentId: c.paymentIntentId, step: 'support', attempt: 0 });
  t.is(refundsMade(c)[0].replaces, undefined);
  t.like(recorded(c)[0], { status: 'refunded', refund: { status: 'pending', refundId: refundId(c, 1) } });
  t.deepEqual(c.audit, ['refund_requested', 'refunded']);
  t.like(c.calls[1].args[3], { reason: 'wrong colour', restock: true, note: 'asked twice by mail' });
  t.deepEqual(c.notified, ['refunded_by_support']);
});

test('a refund whose webhook never comes is read from Stripe after the wait; without restock nothing goes on sale', async (t) => {
  const c = temporal().world.open();
  c.record = confirmed(c);
  const result = await (await refund(c, { restock: false })).result();
  t.like(result, { outcome: 'refunded', restocked: false, refund: { status: 'succeeded', refundId: refundId(c, 1) } });
  t.deepEqual(c.calls.find((x) => x.name === 'getRefund')?.args, [refundId(c, 1)]);
  t.is(c.count('restockSale'), 0);
  t.false('note' in (c.calls[1].args[3] as object));
  t.like(c.record, { status: 'refunded', refund: { status: 'succeeded' } });
  t.deepEqual(c.notified, ['refunded_by_support']);
});

test('a purchase that is missing, unpaid, refunded without a refund or without a PaymentIntent is not refundable, and nothing is called', async (t) => {
  const { world } = temporal();
  const records: Array<[(c: Case) => PurchaseState | null, RegExp]> = [
    [() => null, /no such purchase/],
    [(c) => confirmed(c, { status: 'awaiting_payment' }), /status awaiting_payment has no captured payment/],
    [(c) => confirmed(c, { status: 'refunded' }), /status refunded has no captured payment/],
    [(c) => confirmed(c, { paymentIntentId: undefined }), /status confirmed has no captured payment/],
  ];
  for (const [record, detail] of records) {
    const c = world.open();
    c.record = record(c);
    const result = await (await refund(c)).result();
    t.like(result, { purchaseId: c.id, outcome: 'not_refundable' });
    t.regex(result.detail ?? '', detail);
    t.deepEqual(c.names(), ['loadPurchase']);
    t.deepEqual(c.notified, []);
  }
});

test('a purchase support already refunded answers with its refund and refunds nothing again', async (t) => {
  const c = temporal().world.open();
  const earlier = { status: 'succeeded', reason: 'wrong colour', refundId: 're_earlier' };
  c.record = confirmed(c, { status: 'refunded', refund: earlier });
  t.deepEqual(await (await refund(c)).result(), { purchaseId: c.id, outcome: 'refunded', refund: earlier });
  t.deepEqual(c.names(), ['loadPurchase']);
});

test('a refund Stripe refuses moves the purchase to needs_attention; the next try (after the backoff, or at once on support’s retry) is a new refund with attempt 1', async (t) => {
  const c = temporal().world.open({
    refundPayment: (c, input) => {
      if (!input.attempt) throw refusal('refunding the payment: Stripe answered 402: charge is disputed');
      return { refundId: c.nextRefundId(), status: 'succeeded' };
    },
  });
  c.record = confirmed(c);
  const h = await refund(c);
  await until(() => c.count('refundPayment') >= 1, 'the refused refund');
  await h.signal(supportActionSignal, { action: 'retry', actor: 'ana' });
  const result = await h.result();
  t.like(result, { outcome: 'refunded', restocked: true, refund: { status: 'succeeded', refundId: refundId(c, 1) } });
  t.deepEqual(
    refundsMade(c).map((r) => r.attempt),
    [0, 1],
  );
  const why = 'refunding the payment: Stripe answered 402: charge is disputed';
  t.like(recorded(c)[0], {
    status: 'needs_attention',
    reason: `support refund: ${why}`,
    refund: { status: 'failed', reason: 'wrong colour', failureReason: why },
  });
  t.deepEqual(c.audit, ['refund_requested', 'refund_failed', 'refunded']);
  t.is(c.names('restockSale', 'recordPurchase').join(), 'recordPurchase,recordPurchase,restockSale,recordPurchase');
  t.deepEqual(c.notified, ['refunded_by_support']);
});

test('a refund Stripe keeps refusing is flagged at each try, each a new request, until support settles it by hand (the first word counts)', async (t) => {
  const c = temporal().world.open({
    refundPayment: () => {
      throw refusal('card_declined');
    },
  });
  c.record = confirmed(c);
  const h = await refund(c);
  await until(() => c.count('refundPayment') >= 2, 'a second refused try');
  await h.signal(supportActionSignal, settled('paid back by bank transfer'));
  await h.signal(supportActionSignal, settled('a second note'));
  const result = await h.result();
  const summary = { status: 'settled', reason: 'settled by hand by ana: paid back by bank transfer' };
  t.deepEqual(result, { purchaseId: c.id, outcome: 'refunded', refund: summary, restocked: true });
  t.like(c.record, { status: 'refunded', refund: summary });
  const attempts = refundsMade(c).map((r) => r.attempt);
  t.deepEqual(attempts, [...attempts.keys()]);
  const flags = recorded(c).filter((p) => p.status === 'needs_attention');
  t.is(flags.length, attempts.length);
  t.like(flags[0], { refund: { failureReason: 'refunding the payment: card_declined' } });
  t.deepEqual(c.notified, ['refunded_by_support']);
});

test('a refund Stripe refuses for an open dispute is settled by the dispute once it is lost, the record naming the dispute', async (t) => {
  const c = temporal().world.open({
    refundPayment: () => {
      throw refusal('Charge ch_1 has been charged back; cannot issue a refund.');
    },
  });
  c.record = confirmed(c);
  const h = await refund(c, { restock: false });
  await until(() => c.record?.status === 'needs_attention', 'the refusal flagged');
  const note = 'settled by the dispute dp_1, lost: the money went back to the buyer through the chargeback';
  await h.signal(supportActionSignal, { action: 'settled', actor: DISPUTE_ACTOR, note });
  const summary = { status: 'settled', reason: note };
  t.deepEqual(await h.result(), { purchaseId: c.id, outcome: 'refunded', refund: summary, restocked: false });
  t.like(c.record, { status: 'refunded', refund: summary });
  t.is(c.count('restockSale'), 0);
});

test('a refund that fails after it was made puts the purchase before support and nothing on sale; a late succeeded does not undo the failure; support’s retry makes refund attempt 1', async (t) => {
  const c = temporal().world.open();
  c.record = confirmed(c);
  const failed = { refundId: refundId(c, 1), status: 'failed', failureReason: 'expired_or_canceled_card' };
  const h = await refund(c, {}, failed);
  await h.signal(refundEventSignal, { refundId: refundId(c, 1), status: 'succeeded' });
  await until(() => c.record?.status === 'needs_attention', 'the purchase before support');
  t.like(c.record, {
    reason: 'support refund: the refund failed: expired_or_canceled_card',
    refund: { status: 'failed', refundId: refundId(c, 1), failureReason: 'expired_or_canceled_card' },
  });
  t.is(c.count('restockSale'), 0);
  t.deepEqual(c.notified, []);

  await idle(h, 'the saga waiting for support');
  await h.signal(refundEventSignal, { refundId: refundId(c, 2), status: 'succeeded' });
  await h.signal(supportActionSignal, { action: 'retry', actor: 'ana' });
  const result = await h.result();
  t.like(result, { outcome: 'refunded', restocked: true, refund: { status: 'succeeded', refundId: refundId(c, 2) } });
  t.deepEqual(
    refundsMade(c).map((r) => r.attempt),
    [0, 1],
  );
  t.is(c.count('getRefund'), 0);
  t.deepEqual(c.audit, ['refund_requested', 'refund_failed', 'refunded']);
  t.deepEqual(c.notified, ['refunded_by_support']);
});

test('a refund still pending after the longest wait is put before support; settled by hand, the order is refunded as settled', async (t) => {
  const c = temporal().world.open({ getRefund: (_c, id) => ({ refundId: id, status: 'pending' }) });
  c.record = confirmed(c);
  const h = await refund(c, { restock: false });
  await until(() => c.record?.status === 'needs_attention', 'the purchase before support');
  t.is(c.record?.reason, 'support refund: the refund is still pending after 30 days');
  t.like(c.record?.refund, {
    status: 'failed',
    refundId: refundId(c, 1),
    failureReason: 'the refund is still pending after 30 days',
  });
  t.true(c.count('getRefund') >= 1);
  await h.signal(supportActionSignal, settled('refunded by cheque'));
  const result = await h.result();
  t.like(result, { outcome: 'refunded', restocked: false, refund: { status: 'settled' } });
  t.is(c.count('refundPayment'), 1);
  t.deepEqual(c.notified, ['refunded_by_support']);
});

test('a canceled refund is a failed one: on the record with the saga’s reason when Stripe gives none', async (t) => {
  const c = temporal().world.open();
  c.record = confirmed(c);
  const h = await refund(c, {}, { refundId: refundId(c, 1), status: 'canceled' });
  await until(() => c.record?.status === 'needs_attention', 'the purchase before support');
  t.like(c.record?.refund, { status: 'failed', failureReason: 'the refund canceled' });
  await h.signal(supportActionSignal, settled('refunded in the Dashboard'));
  t.like(await h.result(), {
    refund: { status: 'settled', reason: 'settled by hand by ana: refunded in the Dashboard' },
  });
});

test('a pending webhook changes nothing; the succeeded one after it ends the refund', async (t) => {
  const bothSent = gate(t);
  const c = temporal().world.open({
    refundPayment: async (c) => {
      await bothSent.passed(); // both webhooks are in the saga's history before it follows the refund
      return { refundId: c.nextRefundId(), status: 'pending' };
    },
    getRefund: (_c, id) => ({ refundId: id, status: 'pending' }),
  });
  c.record = confirmed(c);
  const h = await refund(c, { restock: false }, { refundId: refundId(c, 1), status: 'pending' });
  await h.signal(refundEventSignal, { refundId: refundId(c, 1), status: 'succeeded' });
  bothSent.open();
  t.like(await h.result(), { outcome: 'refunded', refund: { status: 'succeeded', refundId: refundId(c, 1) } });
  t.false(recorded(c).some((p) => p.status === 'needs_attention'));
});

test('a payment Stripe says is already refunded in full counts as refunded at once, with no refund to follow', async (t) => {
  const c = temporal().world.open({ refundPayment: () => ({ status: 'succeeded' }) });
  c.record = confirmed(c);
  const result = await (await refund(c)).result();
  t.deepEqual(result, {
    purchaseId: c.id,
    outcome: 'refunded',
    refund: { status: 'succeeded', reason: 'wrong colour' },
    restocked: true,
  });
  t.is(c.count('getRefund'), 0);
  t.deepEqual(c.notified, ['refunded_by_support']);
});

test('a read of the refund Stripe refuses changes nothing: the refund is put before support only once it has been pending too long, not for the refusal', async (t) => {
  const c = temporal().world.open({
    getRefund: () => {
      throw refusal('reading the refund: Stripe answered 404');
    },
  });
  c.record = confirmed(c);
  const h = await refund(c, { restock: false });
  await until(() => c.record?.status === 'needs_attention', 'the purchase before support');
  t.true(c.count('getRefund') >= 1);
  t.is(c.record?.reason, 'support refund: the refund is still pending after 30 days');
  t.false(JSON.stringify(c.calls.slice(3)).includes('Stripe answered 404'));
  await h.signal(supportActionSignal, settled('refunded in the Dashboard'));
  t.like(await h.result(), { outcome: 'refunded', refund: { status: 'settled' } });
  t.is(recorded(c).filter((p) => p.status === 'needs_attention').length, 1);
});

test('a Stripe error that is not a refusal fails the saga: nothing flagged, nothing on sale, the buyer not told', async (t) => {
  const c = temporal().world.open({
    refundPayment: () => {
      throw ApplicationFailure.nonRetryable('no API key', 'StripeConfig');
    },
  });
  c.record = confirmed(c);
  const err = await t.throwsAsync((await refund(c)).result(), { instanceOf: WorkflowFailedError });
  t.true(err?.cause instanceof ActivityFailure);
  t.is((err?.cause?.cause as ApplicationFailure).type, 'StripeConfig');
  t.is(c.record.status, 'confirmed');
  t.deepEqual(c.names(), ['loadPurchase', 'appendAudit', 'refundPayment']);
  t.deepEqual(c.notified, []);
});

test('a saga cancelled while Stripe makes the refund ends cancelled, records nothing and tells no one', async (t) => {
  const stripe = gate(t);
  const c = temporal().world.open({
    refundPayment: async (c) => {
      await stripe.passed();
      return { refundId: c.nextRefundId(), status: 'pending' };
    },
  });
  c.record = confirmed(c);
  const h = await refund(c);
  await until(() => c.count('refundPayment') === 1, 'the refund being made');
  await h.cancel();
  const err = await t.throwsAsync(h.result(), { instanceOf: WorkflowFailedError });
  t.true(err?.cause instanceof CancelledFailure);
  t.is(c.count('recordPurchase'), 0);
  t.deepEqual(c.notified, []);
});
