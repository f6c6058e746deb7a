import test, { type ExecutionContext } from 'ava';
import { WorkflowFailedError } from '@temporalio/client';
import { paymentEventSignal, supportActionSignal } from '../../../workflows/definitions';
import { called, gate, idle, sessionOpen, startPurchase, until } from '../helpers/saga';
import { useFastTemporal } from '../helpers/temporal';
import { refusal } from '../helpers/world';

// The end of the wait (workflows/end-of-wait.ts): delayed payments, the session closed while a buyer
// pays, and payments that land while the saga is finishing. Waits are the fast tier's: a delayed
// payment settles within 3 s or never (test/fast/durations.ts).

const temporal = useFastTemporal(test);

const pending = { paymentStatus: 'unpaid' } as const;

/** A saga with its session open whose hold goes back only once the test opens `landed`. */
async function releasingOnGate(t: ExecutionContext) {
  const { world } = temporal();
  const landed = gate(t);
  const c = world.open({
    releaseHold: () => landed.passed().then(() => ({ released: true, status: 'released' as const })),
  });
  const saga = await startPurchase(temporal(), c);
  await sessionOpen(c);
  return { c, saga, landed };
}

test('a delayed payment keeps the unit while it settles, then confirms', async (t) => {
  const { world } = temporal();
  const c = world.open();
  const saga = await startPurchase(temporal(), c);
  await sessionOpen(c);
  await saga.signal(paymentEventSignal, c.event('checkout.session.completed', pending));
  await until(() => c.record?.reason === 'a delayed payment is settling; the unit stays held', 'settling');
  t.deepEqual(c.calls.find((x) => x.name === 'extendHold')!.args, [c.id, 4]);
  await saga.signal(paymentEventSignal, c.event('checkout.session.async_payment_succeeded'));
  t.like(await saga.result(), { status: 'confirmed' });
  t.is(c.count('expireCheckout'), 0);
});

test('a delayed payment that fails gives the unit back', async (t) => {
  const { world } = temporal();
  const c = world.open({ extendHold: () => null });
  const saga = await startPurchase(temporal(), c);
  await sessionOpen(c);
  await saga.signal(paymentEventSignal, c.event('checkout.session.completed', pending));
  await called(c, 'extendHold');
  await saga.signal(paymentEventSignal, c.event('checkout.session.async_payment_failed'));
  t.like(await saga.result(), { status: 'payment_failed', reason: 'the delayed payment failed' });
  t.deepEqual(c.names('releaseHold'), ['releaseHold']);
});

test('a delayed payment never heard of again is settled by Stripe’s word: paid confirms, unpaid or not ours gives the unit back', async (t) => {
  const { world } = temporal();
  const paid = world.open();
  const unpaid = world.open({ getSessionPayment: () => ({ status: 'complete', paymentStatus: 'unpaid' }) });
  const noIntent = world.open({ getSessionPayment: () => ({ status: 'complete', paymentStatus: 'paid' }) });
  const otherAmount = world.open({
    getSessionPayment: () => ({ status: 'complete', paymentStatus: 'paid', amountCents: 1, currency: 'eur' }),
  });
  const otherCurrency = world.open({
    getSessionPayment: () => ({ status: 'complete', paymentStatus: 'paid', amountCents: 8900, currency: 'USD' }),
  });
  const ends = await Promise.all(
    [paid, noIntent, unpaid, otherAmount, otherCurrency].map(async (c) => {
      const saga = await startPurchase(temporal(), c);
      await sessionOpen(c);
      await saga.signal(paymentEventSignal, c.event('checkout.session.completed', pending));
      return saga.result();
    }),
  );
  t.like(ends[0], { status: 'confirmed', paymentIntentId: paid.paymentIntentId });
  t.like(ends[1], { status: 'confirmed', paymentIntentId: undefined });
  for (const end of ends.slice(2))
    t.like(end, { status: 'payment_failed', reason: 'the delayed payment never settled' });
});

test('a delayed payment whose failure is the first word gives the unit back without closing the session', async (t) => {
  const { world } = temporal();
  const c = world.open();
  const saga = await startPurchase(temporal(), c);
  await sessionOpen(c);
  await saga.signal(paymentEventSignal, c.event('checkout.session.async_payment_failed'));
  t.like(await saga.result(), { status: 'payment_failed' });
  t.is(c.count('expireCheckout'), 0);
});

test('a buyer who completed the session as the saga expired it still gets the unit, paid in time', async (t) => {
  const { world } = temporal();
  const paid = world.open({
    expireCheckout: (c) => ({ status: 'complete', paymentStatus: 'paid', paymentIntentId: c.paymentIntentId }),
  });
  const delayed = world.open({ expireCheckout: () => ({ status: 'complete', paymentStatus: 'unpaid' }) });
  paid.holdMs = delayed.holdMs = 3_000;
  const [a, b] = await Promise.all([startPurchase(temporal(), paid), startPurchase(temporal(), delayed)]);
  t.like(await a.result(), { status: 'confirmed', reason: 'paid in time', paymentIntentId: paid.paymentIntentId });
  await called(delayed, 'extendHold');
  await b.signal(paymentEventSignal, delayed.event('checkout.session.async_payment_succeeded'));
  t.like(await b.result(), { status: 'confirmed' });
});

/** A saga whose hold lapsed and whose session Stripe refuses to expire: it waits in needs_attention. */
async function expireRefusedAtLapse() {
  const c = temporal().world.open({
    expireCheckout: () => {
      throw refusal('Stripe answered 400: try later');
    },
  });
  c.holdMs = 3_000;
  const saga = await startPurchase(temporal(), c);
  await until(() => c.record?.status === 'needs_attention', 'needs_attention');
  return { c, saga };
}

test('while Stripe refuses the expire, a payment that arrives is settled at once', async (t) => {
  const { c, saga } = await expireRefusedAtLapse();
  t.regex(c.record!.reason!, /^expiring the Checkout Session: Stripe answered 400/);
  await saga.signal(paymentEventSignal, c.event('checkout.session.completed', { paymentStatus: 'paid' }));
  // Paid after the hold's end, on a unit the saga still held: a late sale.
  t.like(await saga.result(), {
    status: 'late_confirmed',
    reason: 'paid after the hold lapsed; its unit was still held',
  });
  t.is(c.count('releaseHold'), 0);
});

test('an expire support settled by hand ends the purchase expired', async (t) => {
  const { c, saga } = await expireRefusedAtLapse();
  await saga.signal(supportActionSignal, { action: 'retry', actor: 'ana' });
  await called(c, 'expireCheckout', 2);
  await saga.signal(supportActionSignal, { action: 'settled', actor: 'ana', note: 'expired in the Dashboard' });
  t.like(await saga.result(), { status: 'expired', reason: 'the hold lapsed before payment' });
});

test('a success that lands while a failed delayed payment gives its unit back is settled: a unit is taken again', async (t) => {
  // The failure as the first word, and after the completed session (the saga holding the unit for it).
  for (const completedFirst of [false, true]) {
    // The unit goes back only once the success is in the saga's history.
    const { c, saga, landed } = await releasingOnGate(t);
    if (completedFirst) {
      await saga.signal(paymentEventSignal, c.event('checkout.session.completed', pending));
      await called(c, 'extendHold');
    }
    await saga.signal(paymentEventSignal, c.event('checkout.session.async_payment_failed'));
    await called(c, 'releaseHold');
    await saga.signal(paymentEventSignal, c.event('checkout.session.async_payment_succeeded'));
    landed.open();
    t.like(await saga.result(), { status: 'confirmed' }, `completed first: ${completedFirst}`);
    t.deepEqual(c.names('retakeForLatePayment'), ['retakeForLatePayment']);
  }
});

test('a delayed payment that starts as the hold lapses is waited for; one that never settles is read from Stripe', async (t) => {
  const { world } = temporal();
  // The units go back only once the payments are in their sagas' histories.
  const landed = gate(t);
  const releaseHold = () => landed.passed().then(() => ({ released: true, status: 'expired' as const }));
  const settles = world.open({ releaseHold });
  const never = world.open({
    releaseHold,
    getSessionPayment: () => ({ status: 'complete', paymentStatus: 'unpaid' }),
  });
  // Its success's webhook was lost: Stripe's session says it was paid.
  const lost = world.open({ releaseHold });
  const cases = [settles, never, lost];
  for (const c of cases) c.holdMs = 3_000;
  const [a, b, l] = await Promise.all(cases.map((c) => startPurchase(temporal(), c)));
  await Promise.all(cases.map((c) => called(c, 'releaseHold')));
  await a.signal(paymentEventSignal, settles.event('checkout.session.completed', pending));
  await b.signal(paymentEventSignal, never.event('checkout.session.completed', pending));
  await l.signal(paymentEventSignal, lost.event('checkout.session.completed', pending));
  landed.open();
  await until(() => settles.record?.status === 'expired', 'expired');
  await idle(a, 'the saga waiting for the delayed payment');
  await a.signal(paymentEventSignal, settles.event('checkout.session.async_payment_succeeded'));
  const lateSale = { status: 'late_confirmed', reason: 'paid after the hold lapsed; a unit was still free' };
  t.like(await a.result(), lateSale);
  t.like(await b.result(), { status: 'expired' });
  t.like(await l.result(), { ...lateSale, paymentIntentId: lost.paymentIntentId });
  t.is(never.count('retakeForLatePayment'), 0);
  t.is(never.count('getSessionPayment'), 1);
});

test('a delayed payment that fails after the hold lapsed changes nothing', async (t) => {
  const { world } = temporal();
  const landed = gate(t);
  const c = world.open({
    releaseHold: () => landed.passed().then(() => ({ released: true, status: 'expired' as const })),
  });
  c.holdMs = 3_000;
  const saga = await startPurchase(temporal(), c);
  await called(c, 'releaseHold');
  await saga.signal(paymentEventSignal, c.event('checkout.session.completed', pending));
  landed.open();
  await until(() => c.record?.status === 'expired', 'expired');
  await idle(saga, 'the saga waiting for the delayed payment');
  await saga.signal(paymentEventSignal, c.event('checkout.session.async_payment_failed'));
  t.like(await saga.result(), { status: 'expired' });
});

test('a session that needed no payment is a sale; a delayed payment’s failure after the payment changes nothing', async (t) => {
  const { world } = temporal();
  // The sale is written only once the two later events are in the saga's history.
  const landed = gate(t);
  const free = world.open();
  const raced = world.open({
    convertHold: (c, purchaseId, sale) =>
      landed.passed().then(() => {
        c.record = { ...c.record!, ...sale, purchaseId };
        return 'sold' as const;
      }),
  });
  const [a, b] = await Promise.all([startPurchase(temporal(), free), startPurchase(temporal(), raced)]);
  await Promise.all([sessionOpen(free), sessionOpen(raced)]);
  await a.signal(
    paymentEventSignal,
    free.event('checkout.session.completed', { paymentStatus: 'no_payment_required' }),
  );
  await b.signal(paymentEventSignal, raced.event('checkout.session.completed', { paymentStatus: 'paid' }));
  await called(raced, 'convertHold');
  await b.signal(paymentEventSignal, raced.event('checkout.session.async_payment_failed'));
  await b.signal(paymentEventSignal, raced.event('checkout.session.completed', pending));
  landed.open();
  t.like(await a.result(), { status: 'confirmed' });
  t.like(await b.result(), { status: 'confirmed' });
  t.is(raced.count('releaseHold'), 0);
});

test('a delayed payment’s outcome that lands while an operator’s cancel gives its unit back is settled: a success takes a unit again', async (t) => {
  for (const outcome of ['succeeded', 'failed'] as const) {
    // The unit goes back only once the outcome is in the saga's history.
    const { c, saga, landed } = await releasingOnGate(t);
    await saga.signal(paymentEventSignal, c.event('checkout.session.completed', pending));
    await called(c, 'extendHold');
    await saga.cancel();
    await called(c, 'releaseHold');
    await saga.signal(paymentEventSignal, c.event(`checkout.session.async_payment_${outcome}`));
    landed.open();
    await t.throwsAsync(saga.result(), { instanceOf: WorkflowFailedError });
    if (outcome === 'succeeded') {
      t.deepEqual(c.names('retakeForLatePayment'), ['retakeForLatePayment']);
      t.like(c.record, { status: 'confirmed' }, 'the payer gets a unit');
    } else {
      t.is(c.count('retakeForLatePayment'), 0);
      t.like(c.record, { status: 'failed', reason: 'cancelled by an operator' });
    }
  }
});
