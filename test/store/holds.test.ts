import test from 'ava';
import pg from 'pg';
import { HoldDesk, takeHoldsBatch } from '../../store/hold-desk';
import type { HoldResult } from '../../store/hold-types';
import {
  convertHold,
  extendHold,
  releaseHold,
  restockSale,
  retakeForLatePayment,
  sweepExpired,
  takeHold,
} from '../../store/holds';
import { createProduct, getAvailability, restockProduct, stockView, type NewProduct } from '../../store/products';
import { assertInvariants, countingPool, movements, uniqueSku } from '../helpers/db';
import { createOwnDatabase } from '../helpers/own-database';

// A database of this file's own: the workers of other files sweep lapsed holds of every SKU of the
// shared one, and this file proves what the takes do without a sweeper (test/store/reclaim-race.test.ts
// proves a take racing one).
let db: pg.Pool;
test.before(async () => {
  db = new pg.Pool({ connectionString: await createOwnDatabase(), max: 40 });
});
test.after.always(() => db?.end());

function product(overrides: Partial<NewProduct> = {}): NewProduct {
  return { sku: uniqueSku(), name: 'Sneaker 42', priceCents: 12_000, currency: 'eur', stock: 10, ...overrides };
}

function count(results: HoldResult[], outcome: HoldResult['outcome']): number {
  return results.filter((r) => r.outcome === outcome).length;
}

/** Backdates a hold's expiry a second past its lapse and, unless `withinGrace`, past its product's grace too. */
async function lapse(purchaseId: string, withinGrace = false): Promise<void> {
  await db.query(
    `UPDATE holds h SET expires_at = now() - interval '1 second'
                                   - make_interval(secs => CASE WHEN $2 THEN 0 ELSE p.hold_grace_seconds END)
       FROM products p WHERE p.sku = h.sku AND h.purchase_id = $1`,
    [purchaseId, withinGrace],
  );
}

for (const buckets of [1, 4]) {
  test(`500 concurrent takeHold calls on 10 units in ${buckets} bucket(s) end with exactly 10 holds`, async (t) => {
    const p = await createProduct(db, product({ buckets }));
    const results = await Promise.all(
      Array.from({ length: 500 }, (_, i) =>
        takeHold(db, { purchaseId: `${p.sku}-p${i}`, sku: p.sku, buyerId: `b${i}`, quantity: 1 }),
      ),
    );
    t.is(count(results, 'held'), 10);
    t.is(count(results, 'sold_out'), 490);
    const a = await getAvailability(db, p.sku);
    t.like(a, { available: 0, held: 10, sold: 0, soldOut: true });
    await assertInvariants(t, db, p.sku);
  });
}

test('500 concurrent requests through the hold desk end with exactly 10 holds in far fewer transactions', async (t) => {
  const p = await createProduct(db, product());
  const batches = countingPool(db, 'take_holds_batch');
  const desk = new HoldDesk(batches.pool);
  const results = await Promise.all(
    Array.from({ length: 500 }, (_, i) =>
      desk.take({ purchaseId: `${p.sku}-p${i}`, sku: p.sku, buyerId: `b${i}`, quantity: 1 }),
    ),
  );
  t.is(count(results, 'held'), 10);
  t.is(count(results, 'sold_out'), 490);
  t.true(batches.count() < 50, `${batches.count()} batches for 500 requests`);
  t.like(await getAvailability(db, p.sku), { available: 0, held: 10 });
  await assertInvariants(t, db, p.sku);
});

test('a batch with 3 units left and 5 requests serves the first 3 in arrival order', async (t) => {
  const p = await createProduct(db, product({ stock: 3, buckets: 2 }));
  const reqs = Array.from({ length: 5 }, (_, i) => ({
    purchaseId: `${p.sku}-p${i}`,
    sku: p.sku,
    buyerId: `b${i}`,
    quantity: 1,
  }));
  const results = await takeHoldsBatch(db, p.sku, reqs);
  t.deepEqual(
    results.map((r) => r.outcome),
    ['held', 'held', 'held', 'sold_out', 'sold_out'],
  );
  await assertInvariants(t, db, p.sku);
});

test('the hold desk answers in arrival order at the end of stock', async (t) => {
  const p = await createProduct(db, product({ stock: 3, maxPerBuyer: 2 }));
  const desk = new HoldDesk(db);
  const quantities = [1, 2, 1, 1, 1];
  const results = await Promise.all(
    quantities.map((quantity, i) =>
      desk.take({ purchaseId: `${p.sku}-p${i}`, sku: p.sku, buyerId: `b${i}`, quantity }),
    ),
  );
  t.deepEqual(
    results.map((r) => r.outcome),
    ['held', 'held', 'sold_out', 'sold_out', 'sold_out'],
  );
  await assertInvariants(t, db, p.sku);
});

test('the same purchase id twice, even concurrently, yields one hold', async (t) => {
  const p = await createProduct(db, product());
  const req = { purchaseId: `${p.sku}-same`, sku: p.sku, buyerId: 'b1', quantity: 1 };
  const desk = new HoldDesk(db);
  const results = await Promise.all([takeHold(db, req), takeHold(db, req), desk.take(req), takeHold(db, req)]);
  t.true(results.every((r) => r.outcome === 'held'));
  t.is(await movements(db, req.purchaseId, 'hold'), 1);
  t.like(await getAvailability(db, p.sku), { available: 9, held: 1 });
  await assertInvariants(t, db, p.sku);
});

test('an expired hold counts as available on read and is reclaimed by the next takeHold with no sweeper', async (t) => {
  const p = await createProduct(db, product({ stock: 1 }));
  const first = await takeHold(db, { purchaseId: `${p.sku}-a`, sku: p.sku, buyerId: 'a', quantity: 1 });
  t.is(first.outcome, 'held');
  t.is((await takeHold(db, { purchaseId: `${p.sku}-b`, sku: p.sku, buyerId: 'b', quantity: 1 })).outcome, 'sold_out');
  await lapse(`${p.sku}-a`);
  t.like(await getAvailability(db, p.sku), { available: 1, held: 0, soldOut: false });
  const second = await takeHold(db, { purchaseId: `${p.sku}-c`, sku: p.sku, buyerId: 'c', quantity: 1 });
  t.is(second.outcome, 'held');
  const { rows } = await db.query(`SELECT status FROM holds WHERE purchase_id = $1`, [`${p.sku}-a`]);
  t.is(rows[0].status, 'expired');
  await assertInvariants(t, db, p.sku);
});

test("a hold lapsed within its grace stays its buyer's: held, not reclaimed, and extendHold keeps it", async (t) => {
  const p = await createProduct(db, product({ stock: 1 }));
  t.is(p.holdGraceSeconds, 30);
  await takeHold(db, { purchaseId: `${p.sku}-a`, sku: p.sku, buyerId: 'a', quantity: 1 });
  await lapse(`${p.sku}-a`, true);
  t.like(await getAvailability(db, p.sku), { available: 0, held: 1, soldOut: true, exhausted: false });
  t.like(await stockView(db, p.sku), { remaining: 0, held: 1 });
  // The next moment it may come back is the end of its grace: its lapse plus the product's 30 s.
  const lapsedAt = (await db.query('SELECT expires_at FROM holds WHERE purchase_id = $1', [`${p.sku}-a`])).rows[0]
    .expires_at as Date;
  t.is((await stockView(db, p.sku))!.nextLapseAt!.getTime() - lapsedAt.getTime(), 30_000);
  t.is((await takeHold(db, { purchaseId: `${p.sku}-b`, sku: p.sku, buyerId: 'b', quantity: 1 })).outcome, 'sold_out');
  // The sweeper (it sweeps every SKU of the database, other tests' too) leaves it alone.
  await sweepExpired(db);
  const { rows } = await db.query('SELECT status FROM holds WHERE purchase_id = $1', [`${p.sku}-a`]);
  t.is(rows[0].status, 'active');
  // A delayed payment completed in time and seen now keeps the unit.
  t.truthy(await extendHold(db, `${p.sku}-a`, 60));
  t.like(await getAvailability(db, p.sku), { available: 0, held: 1 });

  // Past its grace, the next take reclaims it, and extendHold no longer revives it.
  const q = await createProduct(db, product({ stock: 1, holdGraceSeconds: 5 }));
  await takeHold(db, { purchaseId: `${q.sku}-a`, sku: q.sku, buyerId: 'a', quantity: 1 });
  await lapse(`${q.sku}-a`);
  t.is(await extendHold(db, `${q.sku}-a`, 60), null);
  t.like(await stockView(db, q.sku), { remaining: 1, held: 0, nextLapseAt: null });
  t.is((await takeHold(db, { purchaseId: `${q.sku}-b`, sku: q.sku, buyerId: 'b', quantity: 1 })).outcome, 'held');
  await assertInvariants(t, db, p.sku);
  await assertInvariants(t, db, q.sku);
});

test('the sweeper returns lapsed holds to stock exactly once', async (t) => {
  const p = await createProduct(db, product({ stock: 2 }));
  await takeHold(db, { purchaseId: `${p.sku}-a`, sku: p.sku, buyerId: 'a', quantity: 1 });
  await lapse(`${p.sku}-a`);
  await Promise.all([sweepExpired(db), sweepExpired(db), releaseHold(db, `${p.sku}-a`)]);
  t.like(await getAvailability(db, p.sku), { available: 2, held: 0 });
  await assertInvariants(t, db, p.sku);
});

test('a buyer gets one active hold per SKU, even when asking 20 times at once', async (t) => {
  const p = await createProduct(db, product({ maxPerBuyer: 5 }));
  const desk = new HoldDesk(db);
  const results = await Promise.all(
    Array.from({ length: 20 }, (_, i) => {
      const req = { purchaseId: `${p.sku}-p${i}`, sku: p.sku, buyerId: 'same-buyer', quantity: 1 };
      return i % 2 ? takeHold(db, req) : desk.take(req);
    }),
  );
  t.is(count(results, 'held'), 1);
  t.is(count(results, 'hold_exists'), 19);
  await assertInvariants(t, db, p.sku);
});

test('the per-buyer limit counts what the buyer already bought', async (t) => {
  const p = await createProduct(db, product({ maxPerBuyer: 2 }));
  t.like(await takeHold(db, { purchaseId: `${p.sku}-x`, sku: p.sku, buyerId: 'b', quantity: 3 }), {
    outcome: 'limit_exceeded',
    limit: 2,
  });
  t.is((await takeHold(db, { purchaseId: `${p.sku}-a`, sku: p.sku, buyerId: 'b', quantity: 2 })).outcome, 'held');
  t.is((await convertHold(db, `${p.sku}-a`)).outcome, 'sold');
  t.like(await takeHold(db, { purchaseId: `${p.sku}-c`, sku: p.sku, buyerId: 'b', quantity: 1 }), {
    outcome: 'limit_exceeded',
    alreadyCommitted: 2,
  });
  t.like(await getAvailability(db, p.sku), { available: 8, sold: 2 });
  await assertInvariants(t, db, p.sku);
});

test('the oversell allowance is used only after real stock is gone, and flagged', async (t) => {
  const p = await createProduct(db, product({ stock: 2, oversellAllowance: 1, buckets: 2 }));
  const desk = new HoldDesk(db);
  const results = await Promise.all(
    Array.from({ length: 40 }, (_, i) =>
      (i % 2 ? desk.take.bind(desk) : (r: Parameters<typeof takeHold>[1]) => takeHold(db, r))({
        purchaseId: `${p.sku}-p${i}`,
        sku: p.sku,
        buyerId: `b${i}`,
        quantity: 1,
      }),
    ),
  );
  const held = results.filter((r): r is Extract<HoldResult, { outcome: 'held' }> => r.outcome === 'held');
  t.is(held.length, 3);
  t.is(held.filter((r) => r.hold.oversold === 1).length, 1);
  t.like(await getAvailability(db, p.sku), { available: 0, held: 3, oversold: 1, soldOut: true });
  await assertInvariants(t, db, p.sku);
});

test('seats are never double-booked under concurrency, and a named seat goes to one buyer', async (t) => {
  const seats = Array.from({ length: 10 }, (_, i) => `A${i + 1}`);
  const p = await createProduct(db, product({ units: seats }));
  const desk = new HoldDesk(db);
  const named = await Promise.all(
    Array.from({ length: 10 }, (_, i) =>
      desk.take({ purchaseId: `${p.sku}-n${i}`, sku: p.sku, buyerId: `n${i}`, quantity: 1, unitId: 'A5' }),
    ),
  );
  t.is(count(named, 'held'), 1);
  t.is(count(named, 'unit_unavailable'), 9);
  const any = await Promise.all(
    Array.from({ length: 60 }, (_, i) =>
      takeHold(db, { purchaseId: `${p.sku}-p${i}`, sku: p.sku, buyerId: `b${i}`, quantity: 1 }),
    ),
  );
  const held = [...named, ...any].filter((r): r is Extract<HoldResult, { outcome: 'held' }> => r.outcome === 'held');
  t.is(held.length, 10);
  const units = held.flatMap((r) => r.hold.unitIds ?? []);
  t.is(new Set(units).size, 10);
  t.deepEqual([...units].sort(), [...seats].sort());
  await assertInvariants(t, db, p.sku);
});

test('release, convert and restock each move stock once even when called twice at once', async (t) => {
  const p = await createProduct(db, product({ stock: 3 }));
  for (const id of ['r', 's']) {
    await takeHold(db, { purchaseId: `${p.sku}-${id}`, sku: p.sku, buyerId: id, quantity: 1 });
  }
  const released = await Promise.all([releaseHold(db, `${p.sku}-r`), releaseHold(db, `${p.sku}-r`)]);
  t.is(released.filter((r) => r.released).length, 1);
  t.is(await movements(db, `${p.sku}-r`, 'release'), 1);
  const converted = await Promise.all([convertHold(db, `${p.sku}-s`), convertHold(db, `${p.sku}-s`)]);
  t.true(converted.every((r) => r.outcome === 'sold'));
  t.is(await movements(db, `${p.sku}-s`, 'sell'), 1);
  t.like(await getAvailability(db, p.sku), { available: 2, held: 0, sold: 1 });
  const restocked = await Promise.all([restockSale(db, `${p.sku}-s`), restockSale(db, `${p.sku}-s`)]);
  t.is(restocked.filter((r) => r.restocked).length, 1);
  t.like(await getAvailability(db, p.sku), { available: 3, held: 0, sold: 0 });
  await assertInvariants(t, db, p.sku);
});

test('a late payment re-takes a free unit once, and finds none when stock is gone', async (t) => {
  const p = await createProduct(db, product({ stock: 1 }));
  await takeHold(db, { purchaseId: `${p.sku}-late`, sku: p.sku, buyerId: 'late', quantity: 1 });
  await releaseHold(db, `${p.sku}-late`, 'expire');
  t.like(await convertHold(db, `${p.sku}-late`), { outcome: 'lapsed', status: 'expired' });
  const retakes = await Promise.all([
    retakeForLatePayment(db, `${p.sku}-late`),
    retakeForLatePayment(db, `${p.sku}-late`),
  ]);
  t.true(retakes.every((r) => r.outcome === 'sold'));
  t.is(await movements(db, `${p.sku}-late`, 'retake'), 1);
  t.like(await getAvailability(db, p.sku), { available: 0, sold: 1 });

  const q = await createProduct(db, product({ stock: 1 }));
  await takeHold(db, { purchaseId: `${q.sku}-late`, sku: q.sku, buyerId: 'late', quantity: 1 });
  await releaseHold(db, `${q.sku}-late`, 'expire');
  t.is((await takeHold(db, { purchaseId: `${q.sku}-other`, sku: q.sku, buyerId: 'o', quantity: 1 })).outcome, 'held');
  t.deepEqual(await retakeForLatePayment(db, `${q.sku}-late`), { outcome: 'sold_out' });
  await assertInvariants(t, db, p.sku);
  await assertInvariants(t, db, q.sku);
});

test('an unknown SKU is a result, not a fault, on every path', async (t) => {
  const desk = new HoldDesk(db);
  const req = { purchaseId: uniqueSku('p'), sku: uniqueSku('missing'), buyerId: 'b', quantity: 1 };
  t.deepEqual(await takeHold(db, req), { outcome: 'product_not_found' });
  t.deepEqual(await desk.take(req), { outcome: 'product_not_found' });
});

test('a failing batch rejects only its own requests', async (t) => {
  const p = await createProduct(db, product({ stock: 5 }));
  const desk = new HoldDesk(db);
  // A quantity of zero violates the holds CHECK inside the batch transaction: a fault, not a refusal.
  const bad = desk.take({ purchaseId: `${p.sku}-bad`, sku: p.sku, buyerId: 'x', quantity: 0 });
  await t.throwsAsync(bad);
  const good = await desk.take({ purchaseId: `${p.sku}-good`, sku: p.sku, buyerId: 'y', quantity: 1 });
  t.is(good.outcome, 'held');
  t.like(await getAvailability(db, p.sku), { available: 4, held: 1 });
  await assertInvariants(t, db, p.sku);
});

test('units taken from the oversell allowance go back to the allowance, so they are flagged when sold again', async (t) => {
  const p = await createProduct(db, product({ stock: 2, buckets: 2, oversellAllowance: 1, maxPerBuyer: 3 }));
  const big = await takeHold(db, { purchaseId: `${p.sku}-big`, sku: p.sku, buyerId: 'big', quantity: 3 });
  t.like(big, { outcome: 'held', hold: { oversold: 1 } });
  await releaseHold(db, `${p.sku}-big`);
  const desk = new HoldDesk(db);
  const singles = await Promise.all(
    [0, 1, 2, 3].map((i) => desk.take({ purchaseId: `${p.sku}-s${i}`, sku: p.sku, buyerId: `s${i}`, quantity: 1 })),
  );
  const held = singles.filter((r): r is Extract<HoldResult, { outcome: 'held' }> => r.outcome === 'held');
  t.is(held.length, 3);
  t.is(held.filter((r) => r.hold.oversold === 1).length, 1, 'the third unit is flagged as oversold again');
  t.like(await getAvailability(db, p.sku), { available: 0, held: 3, oversold: 1 });
  await assertInvariants(t, db, p.sku);
});

test('a product created empty keeps its buckets, and a restock spreads over them', async (t) => {
  const p = await createProduct(db, product({ stock: 0, buckets: 4 }));
  await restockProduct(db, p.sku, 10);
  const { rows } = await db.query('SELECT available FROM stock_buckets WHERE sku = $1 ORDER BY bucket', [p.sku]);
  t.deepEqual(
    rows.map((r) => r.available),
    [3, 3, 2, 2],
  );
  t.like(await getAvailability(db, p.sku), { total: 10, available: 10 });
  await assertInvariants(t, db, p.sku);
});

test('a buyer asking twice in one batch gets the answers one after the other would give', async (t) => {
  const p = await createProduct(db, product({ stock: 1, maxPerBuyer: 2 }));
  const results = await takeHoldsBatch(db, p.sku, [
    { purchaseId: `${p.sku}-big`, sku: p.sku, buyerId: 'same', quantity: 2 },
    { purchaseId: `${p.sku}-small`, sku: p.sku, buyerId: 'same', quantity: 1 },
    { purchaseId: `${p.sku}-third`, sku: p.sku, buyerId: 'same', quantity: 1 },
  ]);
  t.deepEqual(
    results.map((r) => r.outcome),
    ['sold_out', 'held', 'hold_exists'],
  );
  await assertInvariants(t, db, p.sku);
});
