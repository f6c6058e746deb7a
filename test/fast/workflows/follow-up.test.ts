import test from 'ava';
import type { PurchaseState, PurchaseStatus } from '../../../vocabulary';
import { refusal, TERMS } from '../helpers/world';
import { paymentEventSignal, refundEventSignal, supportActionSignal } from '../../../workflows/definitions';
import { called, idle, startPurchase, until } from '../helpers/saga';
import { useFastTemporal } from '../helpers/temporal';
import type { Case } from '../helpers/world';

// A payment event for a purchase whose saga already closed starts a follow-up run
// (workflows/follow-up.ts): it settles that payment from the record, and nothing else.

const temporal = useFastTemporal(test);

function recorded(c: Case, status: PurchaseStatus): PurchaseState {
  return {
    purchaseId: c.id,
    sku: 'hoodie',
    buyerId: `b-${c.id}`,
    quantity: 1,
    status,
    sessionId: c.sessionId,
    amountCents: 8900,
    currency: 'eur',
    holdExpiresAt: new Date(Date.now() - 60_000).toISOString(),
  };
}

test('a payment after the saga closed takes a unit again; a late one is a late sale', async (t) => {
  const { world } = temporal();
  const c = world.open();
  c.record = recorded(c, 'expired');
  const saga = await startPurchase(temporal(), c, { followUp: true });
  await saga.signal(paymentEventSignal, c.event('checkout.session.completed', { paymentStatus: 'paid' }));
  t.like(await saga.result(), { status: 'late_confirmed' });
  t.deepEqual(c.names(), [
    'loadPurchase',
    'getSessionPayment',
    'retakeForLatePayment',
    'recordPurchase',
    'notifyConfirmed',
  ]);
});

test('a follow-up run started by another session’s payment settles nothing: its events wait for the record, which names its own', async (t) => {
  const { world } = temporal();
  const c = world.open();
  c.record = recorded(c, 'expired');
  const saga = await startPurchase(temporal(), c, { followUp: true });
  // Sent before the run has loaded its record (its first step): it does not know its session yet.
  await saga.signal(
    paymentEventSignal,
    c.event('checkout.session.completed', { sessionId: 'cs_someone_else', paymentStatus: 'paid' }),
  );
  t.like(await saga.result(), { status: 'expired' });
  t.deepEqual(c.names(), ['loadPurchase']);
});

test('a follow-up for a purchase that does not exist, or whose event never comes, does nothing', async (t) => {
  const { world } = temporal();
  const missing = world.open();
  const silent = world.open();
  silent.record = recorded(silent, 'expired');
  const [a, b] = await Promise.all(
    [missing, silent].map(async (c) => (await startPurchase(temporal(), c, { followUp: true })).result()),
  );
  t.is(a.status, 'holding');
  t.is(b.status, 'expired');
  t.deepEqual(missing.names(), ['loadPurchase']);
  t.deepEqual(silent.names(), ['loadPurchase']);
});

test('a delayed payment’s failure for a purchase still holding gives the unit back; for one already ended changes nothing', async (t) => {
  const { world } = temporal();
  const holding = world.open();
  holding.record = recorded(holding, 'awaiting_payment');
  const ended = world.open();
  ended.record = recorded(ended, 'expired');
  for (const c of [holding, ended]) {
    const saga = await startPurchase(temporal(), c, { followUp: true });
    await saga.signal(paymentEventSignal, c.event('checkout.session.async_payment_failed'));
    await saga.result();
  }
  t.like(holding.record, { status: 'payment_failed', reason: 'the delayed payment failed' });
  t.deepEqual(holding.names('releaseHold'), ['releaseHold']);
  t.is(ended.record.status, 'expired');
  t.is(ended.count('releaseHold'), 0);
});

test('a delayed payment that starts after the saga closed is waited for, then settled', async (t) => {
  const { world } = temporal();
  const c = world.open();
  c.record = recorded(c, 'expired');
  const saga = await startPurchase(temporal(), c, { followUp: true });
  await saga.signal(paymentEventSignal, c.event('checkout.session.completed', { paymentStatus: 'unpaid' }));
  await called(c, 'loadPurchase');
  await idle(saga, 'the follow-up waiting for the delayed payment');
  await saga.signal(paymentEventSignal, c.event('checkout.session.async_payment_succeeded'));
  t.like(await saga.result(), { status: 'late_confirmed' });
});

test('a delayed payment that starts after the saga closed and whose outcome never comes is read from Stripe', async (t) => {
  const { world } = temporal();
  // Its success's webhook was lost: Stripe's session says it was paid.
  const lost = world.open();
  lost.record = recorded(lost, 'expired');
  const unpaid = world.open({ getSessionPayment: () => ({ status: 'complete', paymentStatus: 'unpaid' }) });
  unpaid.record = recorded(unpaid, 'expired');
  const ends = await Promise.all(
    [lost, unpaid].map(async (c) => {
      const saga = await startPurchase(temporal(), c, { followUp: true });
      await saga.signal(paymentEventSignal, c.event('checkout.session.completed', { paymentStatus: 'unpaid' }));
      return saga.result();
    }),
  );
  t.like(ends[0], { status: 'late_confirmed', paymentIntentId: lost.paymentIntentId });
  t.like(ends[1], { status: 'expired' });
  t.is(unpaid.count('retakeForLatePayment'), 0);
  t.deepEqual(unpaid.names(), ['loadPurchase', 'getSessionPayment']);
});

test('a payment for a purchase already paid, or an event that brings no money, settles nothing', async (t) => {
  const { world } = temporal();
  const confirmed = world.open();
  confirmed.record = recorded(confirmed, 'confirmed');
  const expiredEvent = world.open();
  expiredEvent.record = recorded(expiredEvent, 'expired');
  const a = await startPurchase(temporal(), confirmed, { followUp: true });
  await a.signal(paymentEventSignal, confirmed.event('checkout.session.completed', { paymentStatus: 'paid' }));
  const b = await startPurchase(temporal(), expiredEvent, { followUp: true });
  await b.signal(paymentEventSignal, expiredEvent.event('checkout.session.expired'));
  t.is((await a.result()).status, 'confirmed');
  t.is((await b.result()).status, 'expired');
  t.deepEqual(confirmed.names(), ['loadPurchase']);
  t.deepEqual(expiredEvent.names(), ['loadPurchase']);
});

test('a delayed payment still pending when its wait runs out, for a purchase already paid, is left as it is', async (t) => {
  const { world } = temporal();
  const c = world.open();
  c.record = recorded(c, 'confirmed');
  const saga = await startPurchase(temporal(), c, { followUp: true });
  await saga.signal(paymentEventSignal, c.event('checkout.session.completed', { paymentStatus: 'unpaid' }));
  t.is((await saga.result()).status, 'confirmed');
  t.deepEqual(c.names(), ['loadPurchase']);
});

test('a payment after the saga closed that the purchase rules refuse is refunded; a failed refund goes to support, who settle it', async (t) => {
  const { world } = temporal();
  const c = world.open({
    judgePayment: () => ({ rule: 'per-address', kind: 'refunded_address_limit', reason: 'limit per address' }),
    // What the failed event says, so a saga that reads the refund first (its event late) learns the same.
    getRefund: (_c, refundId) => ({ refundId, status: 'failed' }),
  });
  c.record = recorded(c, 'expired');
  const saga = await startPurchase(temporal(), c, { followUp: true, terms: { ...TERMS, maxPerAddress: 1 } });
  await saga.signal(paymentEventSignal, c.event('checkout.session.completed', { paymentStatus: 'paid' }));
  await until(() => c.record?.status === 'refunded', 'refunded');
  await saga.signal(refundEventSignal, { refundId: `re_${c.id}_1`, status: 'failed' });
  await until(() => c.record?.status === 'needs_attention', 'needs_attention');
  t.like(c.record.refund, { status: 'failed', failureReason: 'the refund failed' });
  await idle(saga, 'the saga waiting for support');
  await saga.signal(supportActionSignal, { action: 'settled', actor: 'ana', note: 'bank transfer' });
  t.like(await saga.result(), { status: 'refunded', refund: { status: 'settled' } });
  t.is(c.count('retakeForLatePayment'), 0);
  t.deepEqual(c.notified, ['refunded_address_limit']);
});

test('a read of a debit that never settled, refused by Stripe and settled by support, leaves the purchase as it ended', async (t) => {
  const { world } = temporal();
  const c = world.open({
    getSessionPayment: () => {
      throw refusal('Stripe answered 404: no such session');
    },
  });
  c.record = { ...recorded(c, 'expired'), reason: 'the hold lapsed unpaid' };
  const saga = await startPurchase(temporal(), c, { followUp: true });
  await saga.signal(paymentEventSignal, c.event('checkout.session.completed', { paymentStatus: 'unpaid' }));
  await until(() => c.record?.status === 'needs_attention', 'needs_attention');
  await idle(saga, 'the follow-up waiting for support');
  await saga.signal(supportActionSignal, { action: 'settled', actor: 'ana', note: 'no payment in the Dashboard' });
  await saga.result();
  t.like(c.record, { status: 'expired', reason: 'the hold lapsed unpaid' });
  t.is(c.count('retakeForLatePayment'), 0);
});
