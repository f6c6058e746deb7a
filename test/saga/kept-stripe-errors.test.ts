import test from 'ava';
import Stripe from 'stripe';
import { createStripe } from '../../config/clients';
import { assertInvariants } from '../helpers/db';
import { asBuyer, sessionOf, startSystem, SUPPORT_TOKEN, type System } from '../helpers/system';

// Stripe keeps a key's first answer for 24 hours, a 500 included, when its endpoint failed after it
// began: every retry under that key gets the same 500 back (`Idempotent-Replayed: true`). Each
// Stripe step that meets such a replay sends its request once more under a key of its own, so a 500
// Stripe kept does not fail a purchase, leave a session open or hold a buyer's money.
// Serial: faults are armed for the whole emulator.

let sys: System;
test.before(async () => {
  sys = await startSystem();
});
test.after.always(async () => {
  await sys?.close();
});
test.afterEach.always(async () => {
  await sys.emulatorCall('DELETE', '/_emulator/faults');
});

/** The next call to `method path` fails inside Stripe, which keeps its 500 under the call's key. */
async function keptFault(method: string, path: string): Promise<void> {
  const res = await sys.emulatorCall('POST', '/_emulator/faults', { method, path, saved: true, count: 1 });
  if (res.status !== 201) throw new Error(`arming the fault: ${res.status} ${JSON.stringify(res.body)}`);
}

async function faultsLeft(): Promise<unknown[]> {
  const { body } = await sys.emulatorCall('GET', '/_emulator/faults');
  return body.data;
}

const stripe = () => createStripe({ stripeSecretKey: 'sk_test_emulator', stripeApiUrl: sys.emulator.url });

test.serial('a session create answered with a 500 Stripe keeps opens on the next attempt, once', async (t) => {
  const sku = await sys.createProduct({ stock: 1 });
  await keptFault('POST', '/v1/checkout/sessions');
  const res = await sys.buy(sku, 'kept-open');
  t.is(res.status, 201, JSON.stringify(res.body));
  t.deepEqual(await faultsLeft(), [], 'the first attempt met the fault');
  const { purchaseId } = res.body;
  const sessions = (await stripe().checkout.sessions.list({ limit: 100 })).data.filter(
    (s) => s.client_reference_id === purchaseId,
  );
  t.is(sessions.length, 1);
  t.is(sessions[0].url, res.body.checkoutUrl);
  await sys.pay(sessions[0].id, 'succeeded');
  await sys.waitForPurchase(purchaseId, (r) => r.status === 'confirmed');
  await assertInvariants(t, sys.db, sku);
});

test.serial(
  'after a kept 500, an attempt whose answer was lost is met again by the next: one session, however many attempts',
  async (t) => {
    const sku = await sys.createProduct({ stock: 1 });
    const post = { method: 'POST', path: '/v1/checkout/sessions' };
    // Oldest first: the first create fails inside Stripe (kept); the next (its key's replay) only
    // passes a spacer; the one after, under the next key, opens the session and its answer is lost.
    for (const fault of [
      { ...post, saved: true, count: 1 },
      { ...post, latencyMs: 1, count: 1 },
      { ...post, afterServing: true, status: 500, count: 1 },
    ]) {
      const res = await sys.emulatorCall('POST', '/_emulator/faults', fault);
      if (res.status !== 201) throw new Error(`arming ${JSON.stringify(fault)}: ${JSON.stringify(res.body)}`);
    }
    const res = await sys.buy(sku, 'kept-lost');
    t.is(res.status, 201, JSON.stringify(res.body));
    t.deepEqual(await faultsLeft(), []);
    const sessions = (await stripe().checkout.sessions.list({ limit: 100 })).data.filter(
      (s) => s.client_reference_id === res.body.purchaseId,
    );
    t.is(sessions.length, 1, 'the third attempt met the session the second opened');
    t.is(sessions[0].url, res.body.checkoutUrl);
    await assertInvariants(t, sys.db, sku);
  },
);

test.serial('a cancel whose expire Stripe answered with a kept 500 still closes the session', async (t) => {
  const sku = await sys.createProduct({ stock: 1 });
  const res = await sys.buy(sku, 'kept-cancel');
  t.is(res.status, 201, JSON.stringify(res.body));
  const sessionId = await sessionOf(sys.db, res.body.purchaseId);
  await keptFault('POST', `/v1/checkout/sessions/${sessionId}/expire`);
  const cancel = await sys.api(
    'POST',
    `/v1/purchases/${res.body.purchaseId}/cancel`,
    undefined,
    await asBuyer('kept-cancel'),
  );
  t.is(cancel.status, 200, JSON.stringify(cancel.body));
  t.is(cancel.body.status, 'expired');
  t.deepEqual(await faultsLeft(), []);
  t.is((await stripe().checkout.sessions.retrieve(sessionId)).status, 'expired');
  t.true((await sys.pay(sessionId, 'succeeded')).status >= 400, 'nobody can pay it any more');
  t.like(await sys.stock(sku), { available: 1, held: 0 });
  await assertInvariants(t, sys.db, sku);
});

test.serial('a support refund Stripe answered with a kept 500 is made on the next attempt', async (t) => {
  const sku = await sys.createProduct({ stock: 1 });
  const res = await sys.buy(sku, 'kept-refund');
  const sessionId = await sessionOf(sys.db, res.body.purchaseId);
  await sys.pay(sessionId, 'succeeded');
  const paid = await sys.waitForPurchase(res.body.purchaseId, (r) => r.status === 'confirmed');
  await keptFault('POST', '/v1/refunds');
  const refund = await sys.api(
    'POST',
    `/v1/support/purchases/${res.body.purchaseId}/refund`,
    { reason: 'kept 500', restock: true },
    { authorization: `Bearer ${SUPPORT_TOKEN}` },
  );
  t.true([200, 202].includes(refund.status), JSON.stringify(refund.body));
  const done = await sys.waitForPurchase(res.body.purchaseId, (r) => r.refund_status === 'succeeded');
  t.is(done.status, 'refunded');
  t.deepEqual(await faultsLeft(), []);
  const refunds = await stripe().refunds.list({ payment_intent: paid.payment_intent_id as string });
  t.deepEqual(
    refunds.data.map((r: Stripe.Refund) => [r.status, r.amount]),
    [['succeeded', 5000]],
    'refunded once, in full',
  );
  await assertInvariants(t, sys.db, sku);
});
