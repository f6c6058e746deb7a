import test from 'ava';
import { WorkflowFailedError } from '@temporalio/client';
import { CancelledFailure } from '@temporalio/common';
import { paymentEventSignal } from '../../../workflows/definitions';
import { sessionOpen, startPurchase } from '../helpers/saga';
import { useFastTemporal } from '../helpers/temporal';
import { gate, until } from '../helpers/wait';
import { refusal, TERMS } from '../helpers/world';

// The confirmation notice (workflows/saga.ts, announceSale): a confirmed buyer is told once, after
// the saga kept where the purchase ships; a product that ships nowhere costs no Stripe read.

const temporal = useFastTemporal(test);

const SHIPS = { ...TERMS, shippingCountries: ['FR'] };

test('a sale in time reads where it ships, then tells the buyer once', async (t) => {
  const { world } = temporal();
  const c = world.open();
  const saga = await startPurchase(temporal(), c, { terms: SHIPS });
  await sessionOpen(c);
  await saga.signal(paymentEventSignal, c.event('checkout.session.completed'));
  await saga.signal(paymentEventSignal, c.event('checkout.session.completed'));
  t.like(await saga.result(), { status: 'confirmed' });
  t.deepEqual(c.names('convertHold', 'recordShippingAddress', 'notifyConfirmed'), [
    'convertHold',
    'recordShippingAddress',
    'notifyConfirmed',
  ]);
  t.deepEqual(c.calls.find((x) => x.name === 'recordShippingAddress')!.args, [c.id, c.sessionId]);
  t.deepEqual(c.calls.find((x) => x.name === 'notifyConfirmed')!.args, [c.id]);
});

test('a product that ships nowhere is confirmed and told without a Stripe read', async (t) => {
  const { world } = temporal();
  const c = world.open();
  const saga = await startPurchase(temporal(), c);
  await sessionOpen(c);
  await saga.signal(paymentEventSignal, c.event('checkout.session.completed'));
  t.like(await saga.result(), { status: 'confirmed' });
  t.is(c.count('recordShippingAddress'), 0);
  // The notice is written by the sale's own step: one activity, not two.
  t.is(c.count('notifyConfirmed'), 0);
  t.deepEqual(c.names('convertHold', 'notifyConfirmed'), ['convertHold']);
  t.deepEqual(c.calls.find((x) => x.name === 'convertHold')!.args[2], { notice: true });
});

test('a late payment whose unit is re-taken is told too; a refused read of the address still tells', async (t) => {
  const { world } = temporal();
  const c = world.open({
    convertHold: () => 'lapsed',
    recordShippingAddress: () => {
      throw refusal('No such checkout.session');
    },
  });
  const saga = await startPurchase(temporal(), c, { terms: SHIPS });
  await sessionOpen(c);
  await saga.signal(paymentEventSignal, c.event('checkout.session.completed'));
  t.like(await saga.result(), { status: 'confirmed' });
  t.is(c.count('retakeForLatePayment'), 1);
  t.is(c.count('recordShippingAddress'), 1);
  t.is(c.count('notifyConfirmed'), 1);
});

test('a refunded payment gets no confirmation notice', async (t) => {
  const { world } = temporal();
  const c = world.open({
    convertHold: () => 'lapsed',
    retakeForLatePayment: () => ({ outcome: 'sold_out', oversold: false }),
  });
  const saga = await startPurchase(temporal(), c, { terms: SHIPS });
  await sessionOpen(c);
  await saga.signal(paymentEventSignal, c.event('checkout.session.completed'));
  t.like(await saga.result(), { status: 'refunded' });
  t.is(c.count('notifyConfirmed'), 0);
  t.deepEqual(c.notified, ['refunded_sold_out']);
});

test('a saga cancelled while it reads where the sale ships ends cancelled: the sale stands, no notice', async (t) => {
  const { world } = temporal();
  const stripe = gate(t);
  const c = world.open({
    recordShippingAddress: () => stripe.passed(),
  });
  const saga = await startPurchase(temporal(), c, { terms: SHIPS });
  await sessionOpen(c);
  await saga.signal(paymentEventSignal, c.event('checkout.session.completed'));
  await until(() => c.count('recordShippingAddress') === 1, 'the address being read');
  await saga.cancel();
  const err = await t.throwsAsync(saga.result(), { instanceOf: WorkflowFailedError });
  t.true(err?.cause instanceof CancelledFailure);
  t.is(c.record?.status, 'confirmed');
  t.is(c.count('notifyConfirmed'), 0);
});
