import test from 'ava';
import { createStripe } from '../../config/clients';
import { assertInvariants } from '../helpers/db';
import { asBuyer, sellTo, sessionOf, startSystem, SUPPORT_TOKEN, type System } from '../helpers/system';

let sys: System;
test.before(async () => {
  sys = await startSystem();
});
test.after.always(async () => {
  await sys?.close();
});

async function product(overrides: Record<string, unknown> = {}) {
  return sys.createProduct(overrides);
}

async function refundsOf(purchaseId: string): Promise<number> {
  const { body } = await sys.emulatorCall('GET', '/_emulator/events?type=refund.created');
  const events = body.data as { event: { data: { object: { metadata?: Record<string, string> } } } }[];
  return events.filter((e) => e.event.data.object.metadata?.purchase_id === purchaseId).length;
}

test('a buyer who pays in time gets a confirmed order and the unit is sold', async (t) => {
  const sku = await product();
  const res = await sys.buy(sku, 'alice');
  t.is(res.status, 201, JSON.stringify(res.body));
  t.is(res.body.status, 'awaiting_payment');
  t.regex(res.body.checkoutUrl, /\/checkout\/cs_/);
  t.truthy(Date.parse(res.body.holdExpiresAt));
  const sessionId = await sessionOf(sys.db, res.body.purchaseId);
  t.is((await sys.pay(sessionId, 'succeeded')).status, 200);
  const p = await sys.waitForPurchase(res.body.purchaseId, (r) => r.status === 'confirmed');
  t.truthy(p.payment_intent_id);
  t.like(await sys.stock(sku), { available: 4, held: 0, sold: 1 });
  const got = await sys.purchase(res.body.purchaseId);
  t.like(got.body, { status: 'confirmed', sku, buyerId: 'alice', quantity: 1, amountCents: 5000 });
  await assertInvariants(t, sys.db, sku);
});

test('the same Idempotency-Key returns the same purchase and never a second hold', async (t) => {
  const sku = await product();
  const key = `key-${sku}`;
  const [a, b] = await Promise.all([sys.buy(sku, 'bob', {}, key), sys.buy(sku, 'bob', {}, key)]);
  t.deepEqual([a.status, b.status].sort(), [200, 201]);
  t.is(a.body.purchaseId, b.body.purchaseId);
  t.is(a.body.checkoutUrl, b.body.checkoutUrl);
  const again = await sys.buy(sku, 'bob', {}, key);
  t.is(again.status, 200);
  t.like(await sys.stock(sku), { available: 4, held: 1 });
  // The same key with another request is a mistake of the client's, not a new purchase.
  const other = await sys.buy(sku, 'bob', { quantity: 2 }, key);
  t.is(other.status, 400);
  t.is(other.body.type, 'invalid-request');
});

test('a lapsed hold returns its unit, expires the session and ends expired', async (t) => {
  const sku = await product({ holdSeconds: 5 });
  const res = await sys.buy(sku, 'carol');
  t.is(res.status, 201);
  const p = await sys.waitForPurchase(res.body.purchaseId, (r) => r.status === 'expired', 20_000);
  t.is(p.reason, 'the hold lapsed before payment');
  const session = await createStripe({
    stripeSecretKey: 'sk_test_emulator',
    stripeApiUrl: sys.emulator.url,
  }).checkout.sessions.retrieve(p.checkout_session_id);
  t.is(session.status, 'expired');
  t.like(await sys.stock(sku), { available: 5, held: 0, sold: 0 });
  const pay = await sys.pay(p.checkout_session_id, 'succeeded');
  t.true(pay.status >= 400, 'an expired session cannot be paid');
  await assertInvariants(t, sys.db, sku);
});

test('a payment after the hold lapsed, with stock still free, ends late_confirmed', async (t) => {
  const sku = await product({ holdSeconds: 5 });
  const res = await sys.buy(sku, 'dave');
  await sys.waitForPurchase(res.body.purchaseId, (r) => r.status === 'expired', 20_000);
  const sessionId = await sessionOf(sys.db, res.body.purchaseId);
  // A payment that raced the expiry: Stripe completed the session just as we expired it.
  t.is((await sys.pay(sessionId, 'succeeded', { force: true })).status, 200);
  await sys.waitForPurchase(res.body.purchaseId, (r) => r.status === 'late_confirmed');
  t.like(await sys.stock(sku), { available: 4, sold: 1 });
  await assertInvariants(t, sys.db, sku);
});

test('a payment after the hold lapsed, with stock gone, is refunded once with the reason', async (t) => {
  const sku = await product({ holdSeconds: 5, stock: 1 });
  const late = await sys.buy(sku, 'erin');
  await sys.waitForPurchase(late.body.purchaseId, (r) => r.status === 'expired', 20_000);
  await sellTo(sys, sku, 'frank');

  await sys.pay(await sessionOf(sys.db, late.body.purchaseId), 'succeeded', { force: true });
  const p = await sys.waitForPurchase(late.body.purchaseId, (r) => r.status === 'refunded');
  t.regex(p.refund_reason, /sold out/);
  const view = await sys.purchase(late.body.purchaseId);
  t.like(view.body, { status: 'refunded', refund: { status: 'succeeded' } });
  const { rows } = await sys.db.query('SELECT kind FROM notifications WHERE purchase_id = $1', [late.body.purchaseId]);
  t.deepEqual(rows, [{ kind: 'refunded_sold_out' }]);
  t.is(await refundsOf(late.body.purchaseId), 1);
  t.like(await sys.stock(sku), { available: 0, sold: 1 });
  await assertInvariants(t, sys.db, sku);
});

test('a delayed payment that succeeds confirms the order', async (t) => {
  const sku = await product();
  const res = await sys.buy(sku, 'gina');
  const sessionId = await sessionOf(sys.db, res.body.purchaseId);
  await sys.pay(sessionId, 'async_pending');
  await new Promise((r) => setTimeout(r, 300));
  t.is((await sys.purchase(res.body.purchaseId)).body.status, 'awaiting_payment');
  await sys.pay(sessionId, 'async_succeeded');
  await sys.waitForPurchase(res.body.purchaseId, (r) => r.status === 'confirmed');
  t.like(await sys.stock(sku), { sold: 1, held: 0 });
  await assertInvariants(t, sys.db, sku);
});

test('a delayed payment that fails ends payment_failed and returns the unit', async (t) => {
  const sku = await product();
  const res = await sys.buy(sku, 'hank');
  const sessionId = await sessionOf(sys.db, res.body.purchaseId);
  await sys.pay(sessionId, 'async_pending');
  await sys.pay(sessionId, 'async_failed');
  await sys.waitForPurchase(res.body.purchaseId, (r) => r.status === 'payment_failed');
  t.like(await sys.stock(sku), { available: 5, held: 0, sold: 0 });
  await assertInvariants(t, sys.db, sku);
});

test('a declined card keeps the hold, and the buyer may pay on the same session', async (t) => {
  const sku = await product();
  const res = await sys.buy(sku, 'ivy');
  const sessionId = await sessionOf(sys.db, res.body.purchaseId);
  await sys.pay(sessionId, 'declined');
  const p = await sys.waitForPurchase(res.body.purchaseId, (r) => r.reason !== null);
  t.is(p.status, 'awaiting_payment');
  t.regex(p.reason, /declined/);
  t.like(await sys.stock(sku), { available: 4, held: 1 });
  t.is((await sys.pay(sessionId, 'succeeded')).status, 200);
  await sys.waitForPurchase(res.body.purchaseId, (r) => r.status === 'confirmed');
  t.like(await sys.stock(sku), { available: 4, held: 0, sold: 1 });
  await assertInvariants(t, sys.db, sku);
});

test('a declined card ends payment_failed once the hold lapses, with the unit back and the session closed', async (t) => {
  // Long enough for the decline's webhook to reach the saga before the hold lapses on a loaded machine.
  const sku = await product({ holdSeconds: 10 });
  const res = await sys.buy(sku, 'ivan');
  const sessionId = await sessionOf(sys.db, res.body.purchaseId);
  await sys.pay(sessionId, 'declined');
  const p = await sys.waitForPurchase(res.body.purchaseId, (r) => r.status === 'payment_failed', 20_000);
  t.is(p.reason, 'the payment was declined and the hold lapsed');
  t.like(await sys.stock(sku), { available: 5, held: 0 });
  t.true((await sys.pay(sessionId, 'succeeded')).status >= 400, 'the session is closed');
  await assertInvariants(t, sys.db, sku);
});

test('a buyer who cancels gets the hold released and cannot pay any more', async (t) => {
  const sku = await product();
  const res = await sys.buy(sku, 'jack');
  const cancel = await sys.api('POST', `/v1/purchases/${res.body.purchaseId}/cancel`, undefined, await asBuyer('jack'));
  t.is(cancel.status, 200);
  t.is(cancel.body.status, 'expired');
  t.like(await sys.stock(sku), { available: 5, held: 0 });
  t.true((await sys.pay(await sessionOf(sys.db, res.body.purchaseId), 'succeeded')).status >= 400);
  await assertInvariants(t, sys.db, sku);
});

test('a paid purchase cannot be cancelled', async (t) => {
  const sku = await product();
  const res = await sys.buy(sku, 'kim');
  await sys.pay(await sessionOf(sys.db, res.body.purchaseId), 'succeeded');
  await sys.waitForPurchase(res.body.purchaseId, (r) => r.status === 'confirmed');
  const cancel = await sys.api('POST', `/v1/purchases/${res.body.purchaseId}/cancel`, undefined, await asBuyer('kim'));
  t.is(cancel.status, 409);
  t.is(cancel.body.type, 'not-cancellable');
});

test('a cancel while a delayed payment settles is refused, and the payment still becomes the sale', async (t) => {
  const sku = await product({ stock: 1 });
  const res = await sys.buy(sku, 'kai');
  const sessionId = await sessionOf(sys.db, res.body.purchaseId);
  await sys.pay(sessionId, 'async_pending');
  await sys.waitForPurchase(res.body.purchaseId, (r) => /delayed payment is settling/.test(r.reason ?? ''));
  const cancel = await sys.api('POST', `/v1/purchases/${res.body.purchaseId}/cancel`, undefined, await asBuyer('kai'));
  t.is(cancel.status, 409, JSON.stringify(cancel.body));
  t.is(cancel.body.type, 'not-cancellable');
  t.regex(cancel.body.detail, /payment .* is on its way/);
  t.like(await sys.stock(sku), { available: 0, held: 1 }, 'the unit stays the payer’s');
  await sys.pay(sessionId, 'async_succeeded');
  await sys.waitForPurchase(res.body.purchaseId, (r) => r.status === 'confirmed');
  t.like(await sys.stock(sku), { available: 0, held: 0, sold: 1 });
  await assertInvariants(t, sys.db, sku);
});

test('sold out, an existing hold and the per-buyer limit are clear answers', async (t) => {
  const sku = await product({ stock: 1, maxPerBuyer: 1 });
  const limit = await sys.buy(sku, 'ned', { quantity: 2 });
  t.is(limit.status, 422);
  t.is(limit.body.type, 'limit-exceeded');
  t.is((await sys.buy(sku, 'lee')).status, 201);
  const again = await sys.buy(sku, 'lee');
  t.is(again.status, 409);
  t.is(again.body.type, 'hold-exists');
  const out = await sys.buy(sku, 'max');
  t.is(out.status, 409);
  t.is(out.body.type, 'sold-out');
  const missing = await sys.buy('no-such-sku', 'ned');
  t.is(missing.status, 404);
  t.is(missing.body.type, 'product-not-found');
});

test('support refunds a confirmed order once, and with restock the unit is on sale again', async (t) => {
  const sku = await product({ stock: 1 });
  const res = await sys.buy(sku, 'olga');
  await sys.pay(await sessionOf(sys.db, res.body.purchaseId), 'succeeded');
  await sys.waitForPurchase(res.body.purchaseId, (r) => r.status === 'confirmed');
  t.like(await sys.stock(sku), { available: 0, sold: 1 });
  const path = `/v1/support/purchases/${res.body.purchaseId}/refund`;
  const auth = { authorization: `Bearer ${SUPPORT_TOKEN}` };
  t.is((await sys.api('POST', path, { reason: 'damaged box', restock: true })).status, 401);
  const [first, second] = await Promise.all([
    sys.api('POST', path, { reason: 'damaged box', restock: true }, auth),
    sys.api('POST', path, { reason: 'damaged box', restock: true }, auth),
  ]);
  t.is(first.status, 202, JSON.stringify(first.body));
  t.is(second.status, 202);
  await sys.waitForPurchase(res.body.purchaseId, (r) => r.status === 'refunded');
  const third = await sys.api('POST', path, { reason: 'again', restock: true }, auth);
  t.is(third.status, 202);
  t.is(third.body.refund.reason, 'damaged box');
  t.is(await refundsOf(res.body.purchaseId), 1);
  t.like(await sys.stock(sku), { available: 1, sold: 0 });
  const { rows } = await sys.db.query('SELECT action FROM audit_log WHERE purchase_id = $1 ORDER BY id', [
    res.body.purchaseId,
  ]);
  // The second of the two at once joined the first's saga (recorded when it came), or came after it.
  const actions = rows.map((r) => r.action);
  t.deepEqual(
    actions.filter((a) => a !== 'refund_request_joined'),
    ['refund_requested', 'refunded'],
  );
  t.true(actions.filter((a) => a === 'refund_request_joined').length <= 1);
  const unpaid = await sys.buy(sku, 'pete');
  const refuse = await sys.api(
    'POST',
    `/v1/support/purchases/${unpaid.body.purchaseId}/refund`,
    { reason: 'x', restock: false },
    auth,
  );
  t.is(refuse.status, 409);
  t.is(refuse.body.type, 'not-refundable');
  await assertInvariants(t, sys.db, sku);
});

test('a delayed payment completed in time keeps the unit held past the hold, then confirms', async (t) => {
  // Long enough for the completion's webhook to reach the saga before the hold lapses on a loaded machine.
  // No grace: a hold that was not extended would be another buyer's the moment it lapsed.
  const sku = await product({ holdSeconds: 12, stock: 1, holdGraceSeconds: 0 });
  const res = await sys.buy(sku, 'quinn');
  const sessionId = await sessionOf(sys.db, res.body.purchaseId);
  await sys.pay(sessionId, 'async_pending');
  await sys.waitForPurchase(res.body.purchaseId, (r) => /delayed payment is settling/.test(r.reason ?? ''));
  // Well past the hold it first had, the unit is still this buyer's.
  await new Promise((r) => setTimeout(r, Math.max(0, Date.parse(res.body.holdExpiresAt) - Date.now()) + 1000));
  t.like(await sys.stock(sku), { available: 0, held: 1 });
  t.is((await sys.buy(sku, 'rita')).status, 409);
  await sys.pay(sessionId, 'async_succeeded');
  await sys.waitForPurchase(res.body.purchaseId, (r) => r.status === 'confirmed');
  t.like(await sys.stock(sku), { available: 0, held: 0, sold: 1 });
  await assertInvariants(t, sys.db, sku);
});

test('an operator who cancels a saga gets the hold released, the session closed and the purchase failed', async (t) => {
  const sku = await product();
  const res = await sys.buy(sku, 'sam');
  await sys.temporal.workflow.getHandle(`purchase-${res.body.purchaseId}`).cancel();
  const p = await sys.waitForPurchase(res.body.purchaseId, (r) => r.status === 'failed');
  t.is(p.reason, 'cancelled by an operator');
  t.like(await sys.stock(sku), { available: 5, held: 0 });
  t.true((await sys.pay(p.checkout_session_id, 'succeeded')).status >= 400, 'the session is closed');
  await assertInvariants(t, sys.db, sku);
});

test('a retry with the same key is answered from its purchase even after the SKU sold out', async (t) => {
  const sku = await product({ stock: 1 });
  const key = `retry-${sku}`;
  const first = await sys.buy(sku, 'tom', {}, key);
  await sys.pay(await sessionOf(sys.db, first.body.purchaseId), 'succeeded');
  await sys.waitForPurchase(first.body.purchaseId, (r) => r.status === 'confirmed');
  t.is((await sys.buy(sku, 'uma')).status, 409, 'the next buyer is told sold out (and the fast path is armed)');
  const again = await sys.buy(sku, 'tom', {}, key);
  t.is(again.status, 200);
  t.like(again.body, { purchaseId: first.body.purchaseId, status: 'confirmed' });
});

test('a seat bought by id is answered the same on a retry with the same key; a taken seat is sold out for now, then for good', async (t) => {
  const sku = await product({ stock: 3, units: ['A1', 'A2', 'A3'] });
  const key = `seat-${sku}`;
  const first = await sys.buy(sku, 'vera', { unitId: 'A2' }, key);
  t.is(first.status, 201, JSON.stringify(first.body));
  const again = await sys.buy(sku, 'vera', { unitId: 'A2' }, key);
  t.is(again.status, 200);
  t.is(again.body.purchaseId, first.body.purchaseId);
  // Held by another buyer: it may come back when that hold ends, and the refusal says when.
  const taken = await sys.buy(sku, 'walt', { unitId: 'A2' });
  t.is(taken.status, 409);
  t.like(taken.body, { type: 'sold-out', final: false, retryAt: first.body.holdExpiresAt });
  t.true(Number(taken.headers.get('retry-after')) >= 1, String(taken.headers.get('retry-after')));
  // Sold: nothing can bring it back.
  await sys.pay(await sessionOf(sys.db, first.body.purchaseId), 'succeeded');
  await sys.waitForPurchase(first.body.purchaseId, (r) => r.status === 'confirmed');
  const sold = await sys.buy(sku, 'wren', { unitId: 'A2' });
  t.is(sold.status, 409);
  t.like(sold.body, { type: 'sold-out', final: true });
  t.is(sold.headers.get('retry-after'), null);
  await assertInvariants(t, sys.db, sku);
});

test('hold-exists names the purchase the buyer already holds', async (t) => {
  const sku = await product();
  const first = await sys.buy(sku, 'xena');
  const second = await sys.buy(sku, 'xena');
  t.is(second.status, 409);
  t.is(second.body.type, 'hold-exists');
  t.is(second.body.heldBy, first.body.purchaseId);
});

test.serial('a support refund that Stripe refuses is a clear 409, and calling again refunds once it can', async (t) => {
  const sku = await product();
  const res = await sys.buy(sku, 'yves');
  await sys.pay(await sessionOf(sys.db, res.body.purchaseId), 'succeeded');
  await sys.waitForPurchase(res.body.purchaseId, (r) => r.status === 'confirmed');
  const path = `/v1/support/purchases/${res.body.purchaseId}/refund`;
  const auth = { authorization: `Bearer ${SUPPORT_TOKEN}` };
  await sys.emulatorCall('POST', '/_emulator/faults', { path: '/v1/refunds', method: 'POST', status: 400, count: 1 });
  const refused = await sys.api('POST', path, { reason: 'wrong size', restock: false }, auth);
  t.is(refused.status, 409, JSON.stringify(refused.body));
  t.is(refused.body.type, 'not-refundable');
  t.regex(refused.body.detail, /refund failed/);
  const ok = await sys.api('POST', path, { reason: 'wrong size', restock: false }, auth);
  t.is(ok.status, 202, JSON.stringify(ok.body));
  await sys.waitForPurchase(res.body.purchaseId, (r) => r.status === 'refunded');
  t.is(await refundsOf(res.body.purchaseId), 1);
});
