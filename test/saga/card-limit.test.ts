import test from 'ava';
import { assertInvariants } from '../helpers/db';
import { sessionOf, startSystem, type System } from '../helpers/system';

// Limits per payment card: the card fingerprint Stripe reports on the payment is counted against
// what that card already bought of the SKU; beyond `maxPerCard` the payment is refunded and the unit
// goes back on sale.

let sys: System;
test.before(async () => {
  sys = await startSystem();
});
test.after.always(async () => {
  await sys?.close();
});

test('two purchases paid with the same card where maxPerCard is 1: one confirmed, one refunded with the reason', async (t) => {
  const sku = await sys.createProduct({ stock: 5, maxPerCard: 1 });
  t.is((await sys.stock(sku)).maxPerCard, 1);
  const first = await sys.buy(sku, 'card-ann');
  const second = await sys.buy(sku, 'card-ben');
  const other = await sys.buy(sku, 'card-cat');
  const card = { fingerprint: 'fp-shared-card' };
  // Both at once: the claim is taken under a lock, so exactly one of the two passes.
  await Promise.all([
    sys.pay(await sessionOf(sys.db, first.body.purchaseId), 'succeeded', { card }),
    sys.pay(await sessionOf(sys.db, second.body.purchaseId), 'succeeded', { card }),
  ]);
  await sys.pay(await sessionOf(sys.db, other.body.purchaseId), 'succeeded', { card: { fingerprint: 'fp-other' } });
  const ended = (r: { status: string }) => ['confirmed', 'refunded'].includes(r.status);
  const a = await sys.waitForPurchase(first.body.purchaseId, ended);
  const b = await sys.waitForPurchase(second.body.purchaseId, ended);
  t.deepEqual([a.status, b.status].sort(), ['confirmed', 'refunded']);
  const refunded = a.status === 'refunded' ? a : b;
  t.regex(refunded.reason, /limit per card/);
  t.like(await sys.waitForPurchase(refunded.purchase_id, (r) => r.refund_status === 'succeeded'), {
    refund_status: 'succeeded',
  });
  t.is((await sys.waitForPurchase(other.body.purchaseId, ended)).status, 'confirmed');
  const { rows } = await sys.db.query('SELECT kind FROM notifications WHERE purchase_id = $1', [refunded.purchase_id]);
  t.deepEqual(rows, [{ kind: 'refunded_card_limit' }]);
  t.like(await sys.stock(sku), { sold: 2, held: 0, available: 3 });
  await assertInvariants(t, sys.db, sku);
});
