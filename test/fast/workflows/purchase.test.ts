import test from 'ava';
import { WithStartWorkflowOperation, WorkflowFailedError } from '@temporalio/client';
import {
  cancelUpdate,
  holdAnsweredUpdate,
  paymentEventSignal,
  supportActionSignal,
} from '../../../workflows/definitions';
import { called, gate, sagaKnowsSession, sessionOpen, startPurchase, until } from '../helpers/saga';
import { purchaseWorkflow } from '../../../workflows/purchase';
import { useFastTemporal } from '../helpers/temporal';
import { refusal } from '../helpers/world';

// The purchase saga's first run, step by step: the hold, the Checkout Session, the wait for the
// payment, and the operator's cancel. Activities are the world's fakes (test/fast/helpers/world.ts).

const temporal = useFastTemporal(test);

test('a refused hold ends the saga rejected, naming the purchase that holds the SKU', async (t) => {
  const { world } = temporal();
  const held = world.open({ takeHold: () => ({ outcome: 'rejected', rejection: 'hold_exists', heldBy: 'p-other' }) });
  const soldOut = world.open({ takeHold: () => ({ outcome: 'rejected', rejection: 'sold_out' }) });
  const [a, b] = await Promise.all([held, soldOut].map(async (c) => (await startPurchase(temporal(), c)).result()));
  t.like(a, { status: 'rejected', rejection: 'hold_exists', heldBy: 'p-other', reason: 'hold exists' });
  t.like(b, { status: 'rejected', rejection: 'sold_out', reason: 'sold out' });
  t.false('heldBy' in b);
  t.deepEqual(soldOut.names(), ['takeHold', 'recordPurchase']);
});

test('the API’s first wait is answered once the hold is taken, with its end', async (t) => {
  const { world } = temporal();
  const c = world.open();
  const saga = await startPurchase(temporal(), c);
  const answered = await saga.executeUpdate(holdAnsweredUpdate);
  t.truthy(answered.holdExpiresAt);
  t.is(answered.amountCents, 8900);
  await sessionOpen(c);
  await saga.signal(paymentEventSignal, c.event('checkout.session.completed', { paymentStatus: 'paid' }));
  t.is((await saga.result()).status, 'confirmed');
  // The sale and the buyer's notice in one step (no address to read first).
  t.deepEqual(c.names(), ['takeHold', 'openCheckout', 'convertHold']);
  t.like(c.calls[2].args[1], { status: 'confirmed', paymentIntentId: undefined, reason: 'paid in time' });
  t.deepEqual(c.calls[2].args[2], { notice: true });
});

test('the API’s first wait is answered when the hold is refused', async (t) => {
  const { world } = temporal();
  const c = world.open({ takeHold: () => ({ outcome: 'rejected', rejection: 'limit_exceeded' }) });
  const saga = await startPurchase(temporal(), c);
  t.is((await saga.executeUpdate(holdAnsweredUpdate)).status, 'rejected');
});

test('a Checkout Session Stripe refuses fails the purchase, gives the unit back and closes any session a lost answer opened', async (t) => {
  const { world, errorsLogged } = temporal();
  const refused = () => {
    throw refusal('Stripe answered 400: invalid currency');
  };
  const closedOne = world.open({
    openCheckout: refused,
    closeUnansweredCheckout: (c) => ({ sessionId: c.sessionId, status: 'expired', paymentStatus: 'unpaid' }),
  });
  const closeFails = world.open({
    openCheckout: refused,
    closeUnansweredCheckout: () => {
      throw refusal('Stripe answered 400: no such session');
    },
  });
  for (const c of [closedOne, closeFails]) {
    const state = await (await startPurchase(temporal(), c)).result();
    t.like(state, {
      status: 'failed',
      reason: 'could not open the Checkout Session: Stripe answered 400: invalid currency',
    });
    t.deepEqual(c.names('releaseHold', 'closeUnansweredCheckout'), ['releaseHold', 'closeUnansweredCheckout']);
    // The release writes the ending in its own step: no second activity for the record.
    t.deepEqual(c.calls.find((x) => x.name === 'releaseHold')!.args, [
      c.id,
      'release',
      { status: 'failed', reason: 'could not open the Checkout Session: Stripe answered 400: invalid currency' },
    ]);
    t.is(c.count('recordPurchase'), 0);
  }
  await until(() => errorsLogged(/could not close the Checkout Session/).length > 0, 'the error line');
  t.pass();
});

test('a session whose turn comes after the hold ended is given up: the purchase fails, the unit goes back', async (t) => {
  const { world } = temporal();
  // The session's turn never comes before the saga gives up: the answer waits for that, not for a
  // length of time (under load the saga's clock may lag the hold's, and a 4 s wait once came back in
  // time and the purchase expired instead).
  const c = world.open({
    openCheckout: () =>
      until(() => c.record?.status === 'failed', 'the saga giving the session up').then(() => ({
        sessionId: 'cs_never',
        url: '',
        sessionExpiresAt: '',
      })),
  });
  c.holdMs = 1_000;
  const state = await (await startPurchase(temporal(), c)).result();
  t.like(state, {
    status: 'failed',
    reason: 'could not open the Checkout Session: the hold lapsed before the Checkout Session could open',
  });
  t.true(c.names().includes('releaseHold'));
});

test('paid in time: the hold becomes the sale, and the payment event names the PaymentIntent and when it was paid', async (t) => {
  const { world } = temporal();
  const c = world.open();
  const saga = await startPurchase(temporal(), c);
  await sessionOpen(c);
  const paid = c.event('checkout.session.completed', {
    paymentStatus: 'paid',
    paymentIntentId: c.paymentIntentId,
    createdAt: new Date().toISOString(),
  });
  await saga.signal(paymentEventSignal, paid);
  await saga.signal(paymentEventSignal, paid); // redelivered: counted once
  t.like(await saga.result(), { status: 'confirmed', paymentIntentId: c.paymentIntentId, reason: 'paid in time' });
  t.is(c.count('convertHold'), 1);
});

test('a payment Stripe timed after the hold ended, on a hold still ours, is a late sale', async (t) => {
  const { world } = temporal();
  const c = world.open();
  const saga = await startPurchase(temporal(), c);
  await sessionOpen(c);
  const late = new Date(Date.now() + 60_000).toISOString();
  await saga.signal(
    paymentEventSignal,
    c.event('checkout.session.completed', { paymentStatus: 'paid', createdAt: late }),
  );
  t.like(await saga.result(), {
    status: 'late_confirmed',
    reason: 'paid after the hold lapsed; its unit was still held',
  });
});

test('an event of another session is ignored; one that arrives before the session opened is kept', async (t) => {
  const { world } = temporal();
  const c = world.open();
  // The other session's event must reach the saga before its hold lapses (see the declines' test).
  c.holdMs = 4_000;
  const saga = await startPurchase(temporal(), c);
  await sagaKnowsSession(saga);
  await saga.signal(
    paymentEventSignal,
    c.event('checkout.session.completed', { paymentStatus: 'paid', sessionId: 'cs_other' }),
  );
  t.like(await saga.result(), { status: 'expired', reason: 'the hold lapsed before payment' });
  t.deepEqual(c.calls.find((x) => x.name === 'releaseHold')!.args, [
    c.id,
    'expire',
    { status: 'expired', reason: 'the hold lapsed before payment' },
  ]);

  // The session opens only once the payment is in the saga's history.
  const paidFirst = gate(t);
  const early = world.open({
    openCheckout: async (cc, input) => {
      await paidFirst.passed();
      return { sessionId: cc.sessionId, url: 'https://checkout.test', sessionExpiresAt: input.holdExpiresAt };
    },
  });
  const first = await startPurchase(temporal(), early);
  await called(early, 'openCheckout');
  await first.signal(paymentEventSignal, early.event('checkout.session.completed', { paymentStatus: 'paid' }));
  paidFirst.open();
  t.is((await first.result()).status, 'confirmed');
});

test('a declined card keeps the hold and tells the buyer; a payment on the same session then confirms it', async (t) => {
  const { world } = temporal();
  const c = world.open();
  const saga = await startPurchase(temporal(), c);
  await sessionOpen(c);
  const declined = c.event('payment_intent.payment_failed', {
    sessionId: undefined,
    paymentIntentId: c.paymentIntentId,
  });
  await saga.signal(paymentEventSignal, declined);
  await until(() => c.record?.reason?.includes('declined') ?? false, 'the decline on the record');
  t.is(c.record!.status, 'awaiting_payment');
  await saga.signal(paymentEventSignal, c.event('checkout.session.completed', { paymentStatus: 'paid' }));
  t.like(await saga.result(), { status: 'confirmed', paymentIntentId: c.paymentIntentId });
});

test('declines until the hold lapses end in payment_failed; a lapse with none in expired', async (t) => {
  const { world } = temporal();
  const declined = world.open();
  const lapsed = world.open();
  // The decline must reach the saga before its hold lapses: the saga's start, its session and the
  // signal all take their time on a loaded machine, so the hold leaves them a few seconds.
  declined.holdMs = lapsed.holdMs = 6_000;
  const [a, b] = await Promise.all([startPurchase(temporal(), declined), startPurchase(temporal(), lapsed)]);
  await sessionOpen(declined);
  await a.signal(paymentEventSignal, declined.event('payment_intent.payment_failed', { sessionId: undefined }));
  t.like(await a.result(), { status: 'payment_failed', reason: 'the payment was declined and the hold lapsed' });
  t.like(await b.result(), { status: 'expired', reason: 'the hold lapsed before payment' });
  t.deepEqual(declined.names('expireCheckout', 'releaseHold'), ['expireCheckout', 'releaseHold']);
});

test('the buyer’s cancel expires the session, gives the unit back, and is answered once it has', async (t) => {
  const { world } = temporal();
  const c = world.open();
  const saga = await startPurchase(temporal(), c);
  await sessionOpen(c);
  // A cancel before the saga reads the step's answer is one before the checkout opened (a test of its own).
  await sagaKnowsSession(saga);
  const answer = await saga.executeUpdate(cancelUpdate);
  t.like(answer, { status: 'expired', reason: 'cancelled by the buyer' });
  t.deepEqual(c.names('expireCheckout', 'releaseHold'), ['expireCheckout', 'releaseHold']);
});

test('the buyer’s cancel while the session waits for its turn gives the unit back at once; the step is called off', async (t) => {
  const { world } = temporal();
  // The Stripe budget's turn does not come before the cancel.
  const turn = gate(t);
  const c = world.open({
    openCheckout: () => turn.passed().then(() => ({ sessionId: 'cs_late', url: '', sessionExpiresAt: '' })),
  });
  const saga = await startPurchase(temporal(), c);
  await called(c, 'openCheckout');
  const answer = await saga.executeUpdate(cancelUpdate);
  t.like(answer, { status: 'expired', reason: 'cancelled by the buyer before the checkout opened' });
  t.like(await saga.result(), { status: 'expired' });
  t.like(c.record, { status: 'expired', reason: 'cancelled by the buyer before the checkout opened' });
  // A session an attempt may have opened is looked for (the activity asks Stripe only if one ran).
  t.deepEqual(c.names('releaseHold', 'closeUnansweredCheckout', 'expireCheckout'), [
    'releaseHold',
    'closeUnansweredCheckout',
  ]);
});

test('the buyer’s cancel that starts a saga still waiting for its slot gives the hold back before any session step', async (t) => {
  const { world, env, taskQueue } = temporal();
  const c = world.open();
  // A cancel sent to a saga whose start is delayed starts it; its first task holds the cancel too.
  const start = new WithStartWorkflowOperation(purchaseWorkflow, {
    taskQueue,
    workflowId: `purchase-${c.id}`,
    args: [c.input()],
    workflowIdConflictPolicy: 'USE_EXISTING',
  });
  const answer = await env.client.workflow.executeUpdateWithStart(cancelUpdate, { startWorkflowOperation: start });
  t.like(answer, { status: 'expired', reason: 'cancelled by the buyer before the checkout opened' });
  t.deepEqual(c.names(), ['takeHold', 'releaseHold']);
});

test('a session Stripe expired on its own is not expired again', async (t) => {
  const { world } = temporal();
  const c = world.open();
  const saga = await startPurchase(temporal(), c);
  await sessionOpen(c);
  await saga.signal(paymentEventSignal, c.event('checkout.session.expired'));
  t.like(await saga.result(), { status: 'expired' });
  t.is(c.count('expireCheckout'), 0);
});

test('an operator’s cancel before the session opened gives the unit back; the run ends cancelled', async (t) => {
  const { world } = temporal();
  // The session step never answers before the cancel (the saga does not wait for it after one).
  const never = gate(t);
  const c = world.open({
    openCheckout: () => never.passed().then(() => ({ sessionId: 'cs_late', url: '', sessionExpiresAt: '' })),
  });
  const saga = await startPurchase(temporal(), c);
  await called(c, 'openCheckout');
  await saga.cancel();
  await t.throwsAsync(saga.result(), { instanceOf: WorkflowFailedError });
  t.like(c.record, { status: 'failed', reason: 'cancelled by an operator' });
  t.deepEqual(c.names('expireCheckout', 'releaseHold'), ['releaseHold']);
});

test('an operator’s cancel on an open session expires it first; a buyer who had completed it still gets the unit', async (t) => {
  const { world } = temporal();
  const unpaid = world.open();
  const paid = world.open({
    expireCheckout: (c) => ({ status: 'complete', paymentStatus: 'paid', paymentIntentId: c.paymentIntentId }),
  });
  for (const c of [unpaid, paid]) {
    const saga = await startPurchase(temporal(), c);
    await sessionOpen(c);
    await sagaKnowsSession(saga); // a cancel before the saga reads the step's answer cancels the step
    await saga.cancel();
    await t.throwsAsync(saga.result());
  }
  t.like(unpaid.record, { status: 'failed', reason: 'cancelled by an operator' });
  t.deepEqual(unpaid.names('expireCheckout', 'releaseHold'), ['expireCheckout', 'releaseHold']);
  t.like(paid.record, { status: 'confirmed', paymentIntentId: paid.paymentIntentId });
  t.is(paid.count('releaseHold'), 0);
});

test('an operator’s cancel whose expire Stripe refuses waits for support, who settles it by hand', async (t) => {
  const { world } = temporal();
  const c = world.open({
    expireCheckout: () => {
      throw refusal('Stripe answered 400: the session cannot be expired');
    },
  });
  const saga = await startPurchase(temporal(), c);
  await sessionOpen(c);
  await sagaKnowsSession(saga);
  await saga.cancel();
  await until(() => c.record?.status === 'needs_attention', 'needs_attention');
  await saga.signal(supportActionSignal, { action: 'settled', actor: 'ana', note: 'expired in the Dashboard' });
  await t.throwsAsync(saga.result());
  t.like(c.record, { status: 'failed', reason: 'cancelled by an operator' });
});

test('an operator’s cancel while a paid hold is being converted still confirms the sale', async (t) => {
  const { world } = temporal();
  // The first conversion is still running when the cancel comes (the saga does not wait for it after one).
  const cancelled = gate(t);
  const c = world.open({
    convertHold: async (cc, purchaseId, sale) => {
      if (cc.count('convertHold') === 1) await cancelled.passed();
      cc.record = { ...cc.record!, ...sale, purchaseId };
      return 'sold' as const;
    },
  });
  const saga = await startPurchase(temporal(), c);
  await sessionOpen(c);
  await saga.signal(paymentEventSignal, c.event('checkout.session.completed', { paymentStatus: 'paid' }));
  await called(c, 'convertHold');
  await saga.cancel();
  await t.throwsAsync(saga.result());
  t.is(c.count('convertHold'), 2);
  t.is(c.count('releaseHold'), 0);
  t.like(c.record, { status: 'confirmed' });
});

test('a hold that names where the product ships and how it may be paid opens a session that says so', async (t) => {
  const { world } = temporal();
  const c = world.open({
    takeHold: (cc) => ({
      outcome: 'held',
      holdExpiresAt: new Date(Date.now() + cc.holdMs).toISOString(),
      holdSeconds: cc.holdMs / 1000,
      amountCents: 8900,
      unitAmountCents: 8900,
      currency: 'eur',
      productName: 'Hoodie',
      oversold: false,
      shippingCountries: ['DE', 'FR'],
      paymentMethodTypes: ['card'],
    }),
  });
  const saga = await startPurchase(temporal(), c);
  await sessionOpen(c);
  await saga.signal(paymentEventSignal, c.event('checkout.session.completed', { paymentStatus: 'paid' }));
  await saga.result();
  t.like(c.calls.find((x) => x.name === 'openCheckout')!.args[0], {
    shippingCountries: ['DE', 'FR'],
    paymentMethodTypes: ['card'],
  });
});

test('an operator’s cancel while a failed session’s leftovers are being closed still gives the unit back', async (t) => {
  const { world } = temporal();
  // The close is still running when the cancel comes (the saga does not wait for it after one).
  const cancelled = gate(t);
  const c = world.open({
    openCheckout: () => {
      throw refusal('Stripe answered 400: invalid currency');
    },
    closeUnansweredCheckout: () => cancelled.passed().then(() => null),
  });
  const saga = await startPurchase(temporal(), c);
  await called(c, 'closeUnansweredCheckout');
  await saga.cancel();
  await t.throwsAsync(saga.result(), { instanceOf: WorkflowFailedError });
  t.like(c.record, { status: 'failed', reason: 'cancelled by an operator' });
});
