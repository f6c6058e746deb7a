import { randomUUID } from 'node:crypto';
import test from 'ava';
import { takeCheckoutSlot } from '../../store/checkout-line';
import { openPurchase } from '../../store/open-purchase';
import { testDb, uniqueSku } from '../helpers/db';

const db = testDb(24);
test.after.always(() => db.end());

test('retries of one purchase taking its slot at once all get the one slot it keeps', async (t) => {
  for (let round = 0; round < 5; round++) {
    const opened = await openPurchase(db, randomUUID(), {
      sku: uniqueSku('slot'),
      buyerId: `slot-${round}`,
      quantity: 1,
    });
    if (opened.outcome !== 'created') return t.fail(opened.outcome);
    const id = opened.record.purchaseId;
    const slots = await Promise.all(Array.from({ length: 20 }, () => takeCheckoutSlot(db, id, 1000)));
    const { rows } = await db.query<{ at: Date }>('SELECT checkout_at AS at FROM purchases WHERE purchase_id = $1', [
      id,
    ]);
    t.deepEqual(new Set(slots.map((s) => s.getTime())), new Set([rows[0].at.getTime()]), `round ${round}`);
  }
});
