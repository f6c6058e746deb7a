import { randomUUID } from 'node:crypto';
import test from 'ava';
import { takeCheckoutSlot, takeCheckoutSlots } from '../../store/checkout-line';
import { openPurchase } from '../../store/open-purchase';
import { countingPool, testDb, uniqueSku } from '../helpers/db';

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

async function newPurchase(buyerId: string, sku: string): Promise<string> {
  const opened = await openPurchase(db, randomUUID(), { sku, buyerId, quantity: 1 });
  if (opened.outcome !== 'created') throw new Error(opened.outcome);
  return opened.record.purchaseId;
}

test('winners placed at once take slots at least one interval apart, in one statement per batch', async (t) => {
  const sku = uniqueSku('slots');
  const ids = await Promise.all(Array.from({ length: 60 }, (_, i) => newPurchase(`slots-${i}`, sku)));
  const counting = countingPool(db, 'checkout_pace');
  // 500 a second: at least 2 ms apart, whatever the batches (other files' winners share the pace).
  const slots = await Promise.all(ids.map((id) => takeCheckoutSlot(counting.pool, id, 500)));
  const times = slots.map((s) => s.getTime()).sort((a, b) => a - b);
  t.is(new Set(times).size, 60, 'one slot each');
  for (let i = 1; i < times.length; i++)
    t.true(times[i] - times[i - 1] >= 2, `slot ${i}: ${times[i] - times[i - 1]} ms`);
  t.true(counting.count() < 60, `${counting.count()} statements for 60 winners`);
  // Each kept its own: asking again (a retry) answers the same.
  t.deepEqual(await Promise.all(ids.map((id) => takeCheckoutSlot(db, id, 500))), slots);
});

test('a batch names each purchase once, keeps the slot one already has, and answers an unknown id with now', async (t) => {
  const sku = uniqueSku('slot-mix');
  const [kept, fresh] = await Promise.all([newPurchase('mix-a', sku), newPurchase('mix-b', sku)]);
  const [before] = await takeCheckoutSlots(db, [kept], 1000);
  const unknown = `pur_${randomUUID()}`;
  const t0 = Date.now();
  const slots = await takeCheckoutSlots(db, [fresh, kept, fresh, unknown], 1000);
  t.is(slots.length, 4);
  t.is(slots[1].getTime(), before.getTime());
  t.is(slots[0].getTime(), slots[2].getTime());
  t.true(slots[0].getTime() > before.getTime(), 'the new one after the kept one');
  t.true(Math.abs(slots[3].getTime() - t0) < 5_000, 'unknown: now');
  const { rows } = await db.query<{ n: number }>('SELECT count(*)::int AS n FROM purchases WHERE purchase_id = $1', [
    unknown,
  ]);
  t.is(rows[0].n, 0);
});
