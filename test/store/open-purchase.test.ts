import { randomUUID } from 'node:crypto';
import test from 'ava';
import { openPurchase, purchaseIdFor } from '../../store/purchases';
import { testDb, uniqueSku } from '../helpers/db';

const db = testDb(8);
test.after.always(() => db.end());

test('the same key recorded by 8 requests at once makes one purchase, and the others read it back', async (t) => {
  const sku = uniqueSku('open');
  for (let round = 0; round < 40; round++) {
    const key = randomUUID();
    const req = { sku, buyerId: `buyer-${round}`, quantity: 1 };
    const opened = await Promise.all(Array.from({ length: 8 }, () => openPurchase(db, key, req)));
    t.is(opened.filter((o) => o.created).length, 1, `round ${round}`);
    t.true(opened.every((o) => o.record.purchaseId === purchaseIdFor(key, req.buyerId)));
  }
  const { rows } = await db.query('SELECT count(*)::int AS n FROM purchases WHERE sku = $1', [sku]);
  t.is(rows[0].n, 40);
});
