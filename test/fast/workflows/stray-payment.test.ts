import test from 'ava';
import { WorkflowFailedError } from '@temporalio/client';
import { ActivityFailure, ApplicationFailure, CancelledFailure } from '@temporalio/common';
import type { RefundInput } from '../../../activities/stripe';
import { STRAY_REFUND_REFUSED, type RefundEvent, type StrayPaymentInput } from '../../../vocabulary';
import { strayPaymentWorkflow } from '../../../workflows';
import { refundEventSignal, supportActionSignal } from '../../../workflows/definitions';
import { useFastTemporal } from '../helpers/temporal';
import { gate, idle, until } from '../helpers/wait';
import { refusal, type Case } from '../helpers/world';

// Money paid on a session that named one of our purchases but is not its own: refunded in full and
// followed to its end, on the stray payment's own record; a session with no PaymentIntent, a refund
// that fails and a read Stripe refuses are left for support; money the refund step finds is not stray
// is not refunded. The claimed purchase's record is never touched, and no buyer is told.

const temporal = useFastTemporal(test);

const strayOf = (c: Case) => `cs_stray_${c.id}`;

/** Starts the stray payment's saga; `first` arrives with the start (as the refund's webhook would). */
function stray(c: Case, input: Partial<StrayPaymentInput> = {}, first?: RefundEvent) {
  const { env, taskQueue } = temporal();
  const args: [StrayPaymentInput] = [
    {
      sessionId: strayOf(c),
      claimedPurchase: c.id,
      paymentIntentId: c.paymentIntentId,
      why: 'foreign session',
      ...input,
    },
  ];
  const options = { taskQueue, workflowId: `stray-${strayOf(c)}`, args };
  return first
    ? env.client.workflow.signalWithStart(strayPaymentWorkflow, {
        ...options,
        signal: refundEventSignal,
        signalArgs: [first],
      })
    : env.client.workflow.start(strayPaymentWorkflow, options);
}

const refundsMade = (c: Case) => c.calls.filter((x) => x.name === 'refundPayment').map((x) => x.args[0] as RefundInput);
const untouched = (t: import('ava').ExecutionContext, c: Case) => {
  t.is(c.record, null);
  t.is(c.count('recordPurchase'), 0);
  t.deepEqual(c.notified, []);
};

test('a stray payment is refunded in full and followed to succeeded: refunding then refunded on its record, audited on the claimed purchase', async (t) => {
  const c = temporal().world.open();
  const result = await (await stray(c, {}, { refundId: `re_${c.id}_1`, status: 'succeeded' })).result();
  t.deepEqual(result, { sessionId: strayOf(c), outcome: 'refunded' });
  t.deepEqual(refundsMade(c), [
    {
      purchaseId: c.id,
      paymentIntentId: c.paymentIntentId,
      reason: "not this purchase's payment: foreign session",
      step: 'stray',
      sessionId: strayOf(c),
      attempt: 0,
    },
  ]);
  t.deepEqual(c.stray, [
    { status: 'refunding', refundId: `re_${c.id}_1` },
    { status: 'refunded', refundId: `re_${c.id}_1` },
  ]);
  t.deepEqual(c.names(), ['refundPayment', 'recordStrayPayment', 'recordStrayPayment', 'appendAudit']);
  t.deepEqual(c.calls[3].args.slice(1), [
    'saga',
    'stray_payment_refunded',
    { sessionId: strayOf(c), paymentIntentId: c.paymentIntentId, why: 'foreign session', refundId: `re_${c.id}_1` },
  ]);
  untouched(t, c);
});

test('without its PaymentIntent the session is read first; a read Stripe refuses is flagged and read again', async (t) => {
  const c = temporal().world.open({
    getSessionPayment: (c) => {
      if (c.count('getSessionPayment') === 1) throw refusal('Stripe answered 429 too often');
      return { status: 'complete', paymentStatus: 'paid', paymentIntentId: c.paymentIntentId };
    },
  });
  const result = await (await stray(c, { paymentIntentId: undefined })).result();
  t.deepEqual(result, { sessionId: strayOf(c), outcome: 'refunded' });
  t.deepEqual(c.calls[0].args, [strayOf(c)]);
  t.is(c.count('getSessionPayment'), 2);
  t.like(refundsMade(c)[0], { paymentIntentId: c.paymentIntentId, attempt: 0 });
  t.deepEqual(c.stray[0], {
    status: 'needs_attention',
    detail: 'reading the stray session: Stripe answered 429 too often',
  });
  t.like(c.stray.at(-1), { status: 'refunded' });
  untouched(t, c);
});

test('a paid session that names no PaymentIntent is left for support to refund by hand, and nothing is refunded', async (t) => {
  const c = temporal().world.open({ getSessionPayment: () => ({ status: 'complete', paymentStatus: 'paid' }) });
  const result = await (await stray(c, { paymentIntentId: undefined })).result();
  t.deepEqual(result, { sessionId: strayOf(c), outcome: 'needs_attention' });
  t.deepEqual(c.stray, [
    { status: 'needs_attention', detail: 'the paid session names no PaymentIntent: refund it by hand' },
  ]);
  t.deepEqual(c.names(), ['getSessionPayment', 'recordStrayPayment']);
  untouched(t, c);
});

test('a read of the session Stripe keeps refusing, settled by hand by support, ends settled by hand with their note and refunds nothing', async (t) => {
  const c = temporal().world.open({
    getSessionPayment: () => {
      throw refusal('reading the stray session: Stripe answered 403');
    },
  });
  const h = await stray(c, { paymentIntentId: undefined });
  await until(() => c.stray.length >= 1, 'the refused read flagged');
  await h.signal(supportActionSignal, { action: 'settled', actor: 'ana', note: 'refunded in the Dashboard' });
  t.deepEqual(await h.result(), { sessionId: strayOf(c), outcome: 'settled_by_hand' });
  t.like(c.stray[0], { status: 'needs_attention', detail: 'reading the stray session: Stripe answered 403' });
  t.deepEqual(c.stray.at(-1), {
    status: 'settled_by_hand',
    detail: 'settled by hand by ana: refunded in the Dashboard',
  });
  t.is(c.count('refundPayment'), 0);
  untouched(t, c);
});

test('money the refund step finds is not stray is not refunded: refused, nothing recorded or audited by the saga', async (t) => {
  const c = temporal().world.open({
    refundPayment: () => {
      throw ApplicationFailure.nonRetryable('the session is the purchase’s own', STRAY_REFUND_REFUSED);
    },
  });
  t.deepEqual(await (await stray(c)).result(), { sessionId: strayOf(c), outcome: 'refused' });
  t.deepEqual(c.names(), ['refundPayment']);
  t.deepEqual(c.stray, []);
  untouched(t, c);
});

test('a stray refund that fails is left for support with Stripe’s reason; support’s retry makes attempt 1; settled by hand, it is audited as such', async (t) => {
  const c = temporal().world.open({ getRefund: (_c, id) => ({ refundId: id, status: 'pending' }) });
  const h = await stray(c, {}, { refundId: `re_${c.id}_1`, status: 'failed', failureReason: 'lost_or_stolen_card' });
  await until(() => c.stray.some((s) => s.status === 'needs_attention'), 'the failed refund flagged');
  await idle(h, 'the saga waiting for support');
  await h.signal(supportActionSignal, { action: 'retry', actor: 'ana' });
  await until(() => c.count('refundPayment') === 2, 'the second refund');
  await h.signal(supportActionSignal, { action: 'settled', actor: 'ana', note: 'paid back by bank transfer' });
  t.deepEqual(await h.result(), { sessionId: strayOf(c), outcome: 'settled_by_hand' });
  t.deepEqual(
    refundsMade(c).map((r) => r.attempt),
    [0, 1],
  );
  t.deepEqual(c.stray.slice(0, 3), [
    { status: 'refunding', refundId: `re_${c.id}_1` },
    { status: 'needs_attention', refundId: `re_${c.id}_1`, detail: 'the refund failed: lost_or_stolen_card' },
    { status: 'refunding', refundId: `re_${c.id}_2` },
  ]);
  const byHand = 'settled by hand by ana: paid back by bank transfer';
  t.deepEqual(c.stray.at(-1), { status: 'settled_by_hand', detail: byHand });
  t.like(c.calls.at(-1), { name: 'appendAudit' });
  t.like(c.calls.at(-1)?.args[3], { sessionId: strayOf(c), byHand: 'paid back by bank transfer' });
  untouched(t, c);
});

test('a read of the refund that fails with anything but a refusal fails the saga, with the refund left refunding', async (t) => {
  const c = temporal().world.open({
    getRefund: () => {
      throw ApplicationFailure.nonRetryable('no API key', 'StripeConfig');
    },
  });
  const err = await t.throwsAsync((await stray(c)).result(), { instanceOf: WorkflowFailedError });
  t.true(err?.cause instanceof ActivityFailure);
  t.is((err?.cause?.cause as ApplicationFailure).type, 'StripeConfig');
  t.deepEqual(c.stray, [{ status: 'refunding', refundId: `re_${c.id}_1` }]);
  t.is(c.count('appendAudit'), 0);
  untouched(t, c);
});

test('a stray-payment saga cancelled while its refund is being made, waits for the refund or reads it ends cancelled, not refused', async (t) => {
  const { world } = temporal();
  const stripe = gate(t);
  const pending = async (_c: Case, id: string) => {
    await stripe.passed();
    return { refundId: id, status: 'pending' };
  };
  const making = world.open({
    refundPayment: async (c) => {
      await stripe.passed();
      return { refundId: c.nextRefundId(), status: 'pending' };
    },
  });
  const following = world.open({ getRefund: pending });
  const reading = world.open({ getRefund: pending });
  const [hMaking, hFollowing, hReading] = await Promise.all([stray(making), stray(following), stray(reading)]);
  await until(() => making.count('refundPayment') === 1, 'the refund being made');
  await until(() => following.stray.length === 1, 'the refund made');
  await idle(hFollowing, 'the saga waiting for the refund’s webhook');
  await Promise.all([hMaking.cancel(), hFollowing.cancel()]);
  await until(() => reading.count('getRefund') === 1, 'the refund being read');
  await hReading.cancel();
  for (const h of [hMaking, hFollowing, hReading]) {
    const err = await t.throwsAsync(h.result(), { instanceOf: WorkflowFailedError });
    t.true(err?.cause instanceof CancelledFailure);
  }
  t.deepEqual(making.stray, []);
  for (const c of [following, reading]) t.deepEqual(c.stray, [{ status: 'refunding', refundId: `re_${c.id}_1` }]);
  t.is(making.count('appendAudit') + following.count('appendAudit') + reading.count('appendAudit'), 0);
});
