import { randomUUID } from 'node:crypto';
import test from 'ava';
import { openPurchase } from '../../store/open-purchase';
import { purchaseIdFor } from '../../store/purchases';
import { testDb, uniqueSku } from '../helpers/db';

const db = testDb(8);
test.after.always(() => db.end());

test('the same key recorded by 8 requests at once makes one purchase, and the others read it back', async (t) => {
  const sku = uniqueSku('open');
  for (let round = 0; round < 40; round++) {
    const key = randomUUID();
    const req = { sku, buyerId: `buyer-${round}`, quantity: 1 };
    const opened = await Promise.all(Array.from({ length: 8 }, () => openPurchase(db, key, req)));
    t.is(opened.filter((o) => o.outcome === 'created').length, 1, `round ${round}`);
    t.true(opened.every((o) => o.outcome !== 'held' && o.record.purchaseId === purchaseIdFor(key, req.buyerId)));
  }
  const { rows } = await db.query('SELECT count(*)::int AS n FROM purchases WHERE sku = $1', [sku]);
  t.is(rows[0].n, 40);
});

test('one buyer recording 8 purchases of one SKU at once with 8 keys gets one place; the others name it', async (t) => {
  const sku = uniqueSku('one-place');
  for (let round = 0; round < 20; round++) {
    const req = { sku, buyerId: `buyer-${round}`, quantity: 1 };
    const opened = await Promise.all(Array.from({ length: 8 }, () => openPurchase(db, randomUUID(), req)));
    const created = opened.filter((o) => o.outcome === 'created');
    t.is(created.length, 1, `round ${round}: ${opened.map((o) => o.outcome).join(', ')}`);
    const place = created[0].record.purchaseId;
    t.true(
      opened.every((o) => o.outcome === 'created' || (o.outcome === 'held' && o.heldBy === place)),
      `round ${round}: the refused are told the purchase that holds the place`,
    );
  }
  const { rows } = await db.query('SELECT count(*)::int AS n FROM purchases WHERE sku = $1', [sku]);
  t.is(rows[0].n, 20);
});

test("a purchase that left the line (refused, or failed) is no longer the buyer's place", async (t) => {
  const sku = uniqueSku('left-line');
  const req = { sku, buyerId: 'buyer-left', quantity: 1 };
  const first = await openPurchase(db, randomUUID(), req);
  if (first.outcome !== 'created') return t.fail(first.outcome);
  t.like(await openPurchase(db, randomUUID(), req), { outcome: 'held', heldBy: first.record.purchaseId });
  await db.query(`UPDATE purchases SET status = 'rejected' WHERE purchase_id = $1`, [first.record.purchaseId]);
  t.like(await openPurchase(db, randomUUID(), req), { outcome: 'created' });
});

test('a purchase stuck in holding over a minute past its slot does not lock its buyer out', async (t) => {
  const sku = uniqueSku('stuck-line');
  const req = { sku, buyerId: 'buyer-stuck', quantity: 1 };
  const first = await openPurchase(db, randomUUID(), req);
  if (first.outcome !== 'created') return t.fail(first.outcome);
  await db.query(`UPDATE purchases SET checkout_at = now() - interval '61 seconds' WHERE purchase_id = $1`, [
    first.record.purchaseId,
  ]);
  t.like(await openPurchase(db, randomUUID(), req), { outcome: 'created' });
});
