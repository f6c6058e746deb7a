import test from 'ava';
import { ApplicationFailure } from '@temporalio/activity';
import { WorkflowFailedError } from '@temporalio/client';
import { paymentEventSignal, refundEventSignal, supportActionSignal } from '../../../workflows/definitions';
import { called, gate, idle, sessionOpen, sleep, startPurchase, until, type Saga } from '../helpers/saga';
import { useFastTemporal } from '../helpers/temporal';
import { refusal, TERMS, type Case } from '../helpers/world';

// A payment whose hold is gone, and the purchase rules' verdict (workflows/saga.ts): a unit taken
// again, or the money refunded and followed until it is back with the buyer.

const temporal = useFastTemporal(test);

const paid = { paymentStatus: 'paid' } as const;

/** Starts a saga for the case and pays its session. */
async function payFor(c: Case, createdAt?: string): Promise<Saga> {
  const saga = await startPurchase(temporal(), c);
  await sessionOpen(c);
  await saga.signal(
    paymentEventSignal,
    c.event('checkout.session.completed', { ...paid, ...(createdAt ? { createdAt } : {}) }),
  );
  return saga;
}

test('paid in time, but its unit went back to stock first: another unit is taken and it is still a sale in time', async (t) => {
  const { world } = temporal();
  const c = world.open({ convertHold: () => 'lapsed' });
  const saga = await payFor(c, new Date().toISOString());
  t.like(await saga.result(), {
    status: 'confirmed',
    paymentIntentId: c.paymentIntentId,
    reason: 'paid in time; its unit had gone back to stock before the payment was confirmed, and another was taken',
  });
  // The PaymentIntent was read from Stripe: no event named it.
  t.deepEqual(c.names('convertHold', 'getSessionPayment', 'retakeForLatePayment'), [
    'convertHold',
    'getSessionPayment',
    'retakeForLatePayment',
  ]);
});

test('paid after the hold lapsed and its unit was sold: the money goes back and the buyer is told why', async (t) => {
  const { world } = temporal();
  const c = world.open({
    convertHold: () => 'lapsed',
    retakeForLatePayment: () => ({ outcome: 'sold_out', oversold: false }),
  });
  const saga = await payFor(c);
  await until(() => c.record?.refund?.status === 'pending', 'the refund made');
  t.deepEqual(c.notified, ['refunded_sold_out']);
  await saga.signal(refundEventSignal, { refundId: `re_${c.id}_1`, status: 'succeeded' });
  t.like(await saga.result(), {
    status: 'refunded',
    refund: { status: 'succeeded', refundId: `re_${c.id}_1` },
    reason: 'sold out: the hold had lapsed and no unit was left when the payment was confirmed',
  });
  t.like(c.calls.find((x) => x.name === 'refundPayment')!.args[0], { step: 'late', attempt: 0 });
});

test('a buyer at the limit when a late payment is re-taken, or when the hold is converted, is refunded', async (t) => {
  const { world } = temporal();
  const retaken = world.open({
    convertHold: () => 'lapsed',
    retakeForLatePayment: () => ({ outcome: 'limit_exceeded', oversold: false }),
  });
  const converted = world.open({ convertHold: () => 'limit_exceeded' });
  for (const c of [retaken, converted]) {
    const saga = await payFor(c);
    await until(() => c.record?.status === 'refunded', 'refunded');
    await saga.signal(refundEventSignal, { refundId: `re_${c.id}_1`, status: 'succeeded' });
    t.regex((await saga.result()).reason!, /^limit per buyer/);
    t.deepEqual(c.notified, ['refunded_buyer_limit']);
  }
});

test('a late payment re-taken after the hold’s end is a late sale, oversold when the unit was', async (t) => {
  const { world } = temporal();
  const c = world.open({
    convertHold: () => 'lapsed',
    retakeForLatePayment: () => ({ outcome: 'sold', oversold: true }),
  });
  const saga = await payFor(c, new Date(Date.now() + 60_000).toISOString());
  t.like(await saga.result(), { status: 'late_confirmed', oversold: true });
});

test('a refund whose webhook is late is read from Stripe', async (t) => {
  const { world } = temporal();
  const c = world.open({ convertHold: () => 'limit_exceeded' });
  const saga = await payFor(c);
  t.like(await saga.result(), { status: 'refunded', refund: { status: 'succeeded' } });
  t.is(c.count('getRefund'), 1);
});

test('a refund that fails is put in front of support; their retry makes a new refund', async (t) => {
  const { world } = temporal();
  const c = world.open({
    convertHold: () => 'limit_exceeded',
    // What the events say, so a saga that reads a refund first (its event late) learns the same.
    getRefund: (_c, refundId) =>
      refundId.endsWith('_1')
        ? { refundId, status: 'failed', failureReason: 'lost_or_stolen_card' }
        : { refundId, status: 'succeeded' },
  });
  const saga = await payFor(c);
  await called(c, 'refundPayment');
  await saga.signal(refundEventSignal, {
    refundId: `re_${c.id}_1`,
    status: 'failed',
    failureReason: 'lost_or_stolen_card',
  });
  await until(() => c.record?.status === 'needs_attention', 'needs_attention');
  t.like(c.record!.refund, { status: 'failed', failureReason: 'lost_or_stolen_card' });
  await saga.signal(supportActionSignal, { action: 'retry', actor: 'ana' });
  await called(c, 'refundPayment', 2);
  await saga.signal(refundEventSignal, { refundId: `re_${c.id}_2`, status: 'succeeded' });
  t.like(await saga.result(), { status: 'refunded', refund: { status: 'succeeded', refundId: `re_${c.id}_2` } });
  t.like(c.calls.filter((x) => x.name === 'refundPayment')[1].args[0], { attempt: 1 });
});

test('a refund whose paid session names no PaymentIntent waits for support to refund by hand', async (t) => {
  const { world } = temporal();
  const c = world.open({
    convertHold: () => 'limit_exceeded',
    getSessionPayment: () => ({ status: 'complete', paymentStatus: 'paid' }),
  });
  const saga = await payFor(c);
  await until(() => c.record?.status === 'needs_attention', 'needs_attention');
  t.regex(c.record!.reason!, /the paid session names no PaymentIntent$/);
  await saga.signal(supportActionSignal, { action: 'settled', actor: 'ana', note: 'bank transfer 42' });
  t.like(await saga.result(), {
    status: 'refunded',
    refund: { status: 'settled', reason: 'settled by hand by ana: bank transfer 42' },
  });
  t.is(c.count('refundPayment'), 0);
});

test('a read of the paid session Stripe refuses is settled by support, and the saga goes on without it', async (t) => {
  const { world } = temporal();
  const c = world.open({
    convertHold: () => 'lapsed',
    getSessionPayment: () => {
      throw refusal('Stripe answered 404: no such session');
    },
  });
  const saga = await payFor(c);
  await until(() => c.record?.status === 'needs_attention', 'needs_attention');
  await saga.signal(supportActionSignal, { action: 'settled', actor: 'ana', note: 'read in the Dashboard' });
  t.like(await saga.result(), { status: 'confirmed', paymentIntentId: undefined });
});

test('a read of the paid session settled by support is not asked again: the refund without a PaymentIntent waits for its own settlement', async (t) => {
  const { world } = temporal();
  const c = world.open({
    convertHold: () => 'lapsed',
    retakeForLatePayment: () => ({ outcome: 'sold_out', oversold: false }),
    getSessionPayment: () => {
      throw refusal('Stripe answered 404: no such session');
    },
  });
  const saga = await payFor(c);
  await until(() => c.record?.status === 'needs_attention', 'needs_attention');
  await idle(saga, 'the saga waiting for support');
  await saga.signal(supportActionSignal, { action: 'settled', actor: 'ana', note: 'read in the Dashboard' });
  await until(() => /names no PaymentIntent$/.test(c.record?.reason ?? ''), 'the refund put in front of support');
  await idle(saga, 'the saga waiting for the refund by hand');
  await saga.signal(supportActionSignal, { action: 'settled', actor: 'ana', note: 'refunded by bank transfer' });
  t.like(await saga.result(), {
    status: 'refunded',
    refund: { status: 'settled', reason: 'settled by hand by ana: refunded by bank transfer' },
  });
  t.is(c.count('getSessionPayment'), 1);
  t.is(c.count('refundPayment'), 0);
});

const ruled = { ...TERMS, maxPerCard: 1 };

test('a payment the purchase rules refuse is refunded, its hold given back, and the buyer told the rule', async (t) => {
  const { world } = temporal();
  const c = world.open({
    judgePayment: () => ({ rule: 'per-payment-method', kind: 'refunded_card_limit', reason: 'limit per card' }),
  });
  const saga = await startPurchase(temporal(), c, { terms: ruled });
  await sessionOpen(c);
  await saga.signal(paymentEventSignal, c.event('checkout.session.completed', paid));
  await until(() => c.record?.status === 'refunded', 'refunded');
  await saga.signal(refundEventSignal, { refundId: `re_${c.id}_1`, status: 'succeeded' });
  t.like(await saga.result(), { status: 'refunded', reason: 'limit per card', paymentIntentId: c.paymentIntentId });
  t.deepEqual(c.names('readPaymentEvidence', 'judgePayment', 'releaseHold', 'convertHold'), [
    'readPaymentEvidence',
    'judgePayment',
    'releaseHold',
  ]);
  t.deepEqual(c.notified, ['refunded_card_limit']);
});

test('a payment within the rules is a sale; evidence Stripe will not give, or without a PaymentIntent, judges nothing', async (t) => {
  const { world } = temporal();
  const within = world.open();
  const noIntent = world.open({ readPaymentEvidence: () => ({ method: { type: 'link' } }) });
  const unread = world.open({
    readPaymentEvidence: () => {
      throw refusal('Stripe answered 400: cannot expand');
    },
  });
  const sagas = await Promise.all(
    [within, noIntent, unread].map(async (c) => {
      const saga = await startPurchase(temporal(), c, { terms: ruled });
      await sessionOpen(c);
      await saga.signal(paymentEventSignal, c.event('checkout.session.completed', paid));
      return saga;
    }),
  );
  await until(() => unread.record?.status === 'needs_attention', 'needs_attention');
  await sagas[2].signal(supportActionSignal, { action: 'settled', actor: 'ana', note: 'checked by hand' });
  const [a, b, d] = await Promise.all(sagas.map((s) => s.result()));
  t.like(a, { status: 'confirmed', paymentIntentId: within.paymentIntentId });
  t.like(b, { status: 'confirmed' });
  t.like(d, { status: 'confirmed' });
  t.is(within.count('judgePayment'), 1);
  t.is(unread.count('judgePayment'), 0);
});

test('a hold step that finds no hold fails the saga: a bug shown, not a purchase settled wrong', async (t) => {
  const { world } = temporal();
  const c = world.open({
    convertHold: () => {
      throw ApplicationFailure.nonRetryable('no hold for it', 'HoldNotFound');
    },
  });
  const saga = await payFor(c);
  await t.throwsAsync(saga.result(), { instanceOf: WorkflowFailedError });
});

test('support’s settlement of a refused read is that read’s alone: the refund that follows is made through Stripe', async (t) => {
  const { world } = temporal();
  let reads = 0;
  const c = world.open({
    readPaymentEvidence: (k) => {
      if (++reads === 1) throw refusal('Stripe answered 400: cannot expand');
      return { paymentIntentId: k.paymentIntentId, method: { type: 'card', fingerprint: 'fp_1' } };
    },
    convertHold: () => 'lapsed',
    retakeForLatePayment: () => ({ outcome: 'sold_out', oversold: false }),
  });
  const saga = await startPurchase(temporal(), c, { terms: ruled });
  await sessionOpen(c);
  await saga.signal(paymentEventSignal, c.event('checkout.session.completed', paid));
  await until(() => c.record?.status === 'needs_attention', 'needs_attention');
  await saga.signal(supportActionSignal, { action: 'settled', actor: 'ana', note: 'checked the card by hand' });
  t.like(await saga.result(), { status: 'refunded', refund: { status: 'succeeded' } });
  t.is(c.count('refundPayment'), 1);
  t.deepEqual(c.notified, ['refunded_sold_out']);
});

/** A saga whose late payment found no unit and is being refunded; the next re-take finds one (a unit came back). */
function refundingCase(overrides: Parameters<ReturnType<typeof temporal>['world']['open']>[0] = {}) {
  const { world } = temporal();
  let retakes = 0;
  return world.open({
    convertHold: () => 'lapsed',
    retakeForLatePayment: () => ({ outcome: ++retakes === 1 ? 'sold_out' : 'sold', oversold: false }),
    // As Stripe answers the expire of a session that was paid: it reads the session.
    expireCheckout: (k) => ({ status: 'complete', paymentStatus: 'paid', paymentIntentId: k.paymentIntentId }),
    ...overrides,
  });
}

test('an operator’s cancel while the refund of a late payment is on its way sells nothing and gives nothing back twice', async (t) => {
  const c = refundingCase({ getRefund: (_c, refundId) => ({ refundId, status: 'pending' }) });
  const saga = await payFor(c);
  await until(() => c.record?.status === 'refunded', 'refunded');
  await idle(saga, 'the saga waiting to read the refund again');
  await saga.cancel();
  await t.throwsAsync(saga.result());
  // The refund's news comes by webhook now (api/money-news.ts); the paid session has nothing to expire.
  t.like(c.record, { status: 'refunded', refund: { status: 'pending' } });
  t.deepEqual(c.names('retakeForLatePayment', 'refundPayment', 'expireCheckout', 'releaseHold', 'convertHold'), [
    'convertHold',
    'retakeForLatePayment',
    'refundPayment',
  ]);
});

test('an operator’s cancel while Stripe refuses the refund tries it again (same key) and sells nothing', async (t) => {
  let refunds = 0;
  const c = refundingCase({
    refundPayment: (k) => {
      if (++refunds === 1) throw refusal('Stripe answered 400: try again later');
      return { refundId: k.nextRefundId(), status: 'succeeded' };
    },
  });
  const saga = await payFor(c);
  await until(() => c.record?.status === 'needs_attention', 'needs_attention');
  await idle(saga, 'the saga waiting to try the refund again');
  await saga.cancel();
  await t.throwsAsync(saga.result());
  // Stripe made no refund: support's word could not reach a run that makes it again (the record had
  // no payment), so the cancel makes it.
  t.like(c.record, { status: 'refunded', refund: { status: 'succeeded' }, paymentIntentId: c.paymentIntentId });
  t.is(c.count('retakeForLatePayment'), 1);
  const attempts = c.calls
    .filter((k) => k.name === 'refundPayment')
    .map((k) => (k.args[0] as { attempt: number }).attempt);
  t.deepEqual(attempts, [0, 0]);
});

test('a settlement that comes while a refused step’s retry goes through is not carried to the refund after it', async (t) => {
  const second = gate(t);
  let reads = 0;
  const c = temporal().world.open({
    getSessionPayment: async (k) => {
      reads++;
      if (reads === 1) throw refusal('Stripe answered 404: no such session');
      if (reads === 2) await second.passed();
      return { status: 'complete', paymentStatus: 'paid', paymentIntentId: k.paymentIntentId };
    },
    convertHold: () => 'lapsed',
    retakeForLatePayment: () => ({ outcome: 'sold_out', oversold: false }),
  });
  const saga = await payFor(c);
  // Refused, then tried again after its backoff: support settles it while that try is going through.
  await called(c, 'getSessionPayment', 2);
  await saga.signal(supportActionSignal, { action: 'settled', actor: 'ana', note: 'read it in the Dashboard' });
  // The saga has taken the word (its workflow task done) before the read answers.
  for (const deadline = Date.now() + 40_000; (await saga.describe()).raw.pendingWorkflowTask; await sleep(20)) {
    if (Date.now() > deadline) throw new Error('the saga never took the settlement');
  }
  second.open();
  t.like(await saga.result(), { status: 'refunded', refund: { status: 'succeeded' } });
  t.is(c.count('refundPayment'), 1);
});

test('an operator’s cancel while the refund is being asked of Stripe makes it (same key) and follows it', async (t) => {
  const first = gate(t);
  const c = refundingCase({
    refundPayment: async (k) => {
      if (k.count('refundPayment') === 1) await first.passed();
      return { refundId: k.nextRefundId(), status: 'succeeded' };
    },
  });
  const saga = await payFor(c);
  await called(c, 'refundPayment');
  await saga.cancel();
  await t.throwsAsync(saga.result());
  first.open();
  t.like(c.record, { status: 'refunded', refund: { status: 'succeeded' } });
  t.is(c.count('retakeForLatePayment'), 1);
  const attempts = c.calls
    .filter((k) => k.name === 'refundPayment')
    .map((k) => (k.args[0] as { attempt: number }).attempt);
  t.deepEqual(attempts, [0, 0]);
});
