import test from 'ava';
import { takeHoldsBatch } from '../../store/hold-desk';
import { createProduct } from '../../store/products';
import { assertInvariants, testDb, uniqueSku } from '../helpers/db';

// Migration 034: when every eligible request of a batch fits in the real stock of the bucket the batch
// starts at, take_holds_batch gives each that bucket without running allocate_units; otherwise it runs
// allocate_units as before. Either way each request must get what allocate_units gives it, in arrival
// order, with the requests the store refuses (limit, the buyer's hold, a retry) left out of it.

const db = testDb(4);
test.after.always(() => db.end());

interface Case {
  stock: number;
  buckets: number;
  allowance: number;
  start: number;
  /**
   * Per request, from the real stock of the bucket the batch starts at; a quantity over maxPerBuyer (3)
   * is refused for the limit and takes no part.
   */
  quantities: (startStock: number) => number[];
}

/** What allocate_units gives the eligible requests on the SKU's buckets as they are now. */
async function expected(
  sku: string,
  c: Case,
  quantities: number[],
): Promise<{ outcome: string; bucket?: number; oversold?: number }[]> {
  const want = quantities.map((q) => (q > 3 ? null : q));
  const { rows } = await db.query<{ ids: number[]; picks: (number | null)[]; overs: number[] }>(
    `SELECT b.ids, (a).picks, (a).overs
       FROM (SELECT array_agg(bucket ORDER BY bucket) AS ids, array_agg(available ORDER BY bucket) AS avail,
                    array_agg(floor ORDER BY bucket) AS floors, count(*)::int AS nb
               FROM stock_buckets WHERE sku = $1) b,
            LATERAL (SELECT allocate_units(b.avail, b.floors, $2::int[], $3 % b.nb) AS a) x`,
    [sku, want, c.start],
  );
  const { ids, picks, overs } = rows[0];
  return quantities.map((q, i) => {
    if (q > 3) return { outcome: 'limit_exceeded' };
    if (picks[i] === null) return { outcome: 'sold_out' };
    return { outcome: 'held', bucket: ids[picks[i] - 1], oversold: overs[i] };
  });
}

async function run(c: Case): Promise<{ got: unknown[]; want: unknown[]; sku: string }> {
  const sku = uniqueSku('lean');
  await createProduct(db, {
    sku,
    name: 'Runner',
    priceCents: 100,
    currency: 'eur',
    stock: c.stock,
    buckets: c.buckets,
    oversellAllowance: c.allowance,
    maxPerBuyer: 3,
  });
  const { rows } = await db.query<{ available: number }>(
    'SELECT available FROM stock_buckets WHERE sku = $1 ORDER BY bucket OFFSET $2 LIMIT 1',
    [sku, c.start % c.buckets],
  );
  const quantities = c.quantities(rows[0].available);
  const want = await expected(sku, c, quantities);
  const results = await takeHoldsBatch(
    db,
    sku,
    quantities.map((quantity, i) => ({ purchaseId: `${sku}-p${i}`, sku, buyerId: `b${i}`, quantity })),
    c.start,
  );
  const got = results.map((r) =>
    r.outcome === 'held'
      ? { outcome: 'held', bucket: r.hold.bucket, oversold: r.hold.oversold }
      : { outcome: r.outcome },
  );
  return { got, want, sku };
}

// 10 units over 3 buckets: 3 or 4 in each; bucket 0 may go 2 below zero.
const cases: [string, Case][] = [
  ['exactly the start bucket', { stock: 10, buckets: 3, allowance: 2, start: 1, quantities: (a) => [1, 4, a - 1] }],
  [
    'one unit past the start bucket',
    { stock: 10, buckets: 3, allowance: 2, start: 1, quantities: (a) => [1, 4, a - 1, 1] },
  ],
  ['a start past the last bucket', { stock: 10, buckets: 3, allowance: 2, start: 3, quantities: (a) => [1, 1, a - 2] }],
  ['from the last bucket on', { stock: 10, buckets: 3, allowance: 2, start: 2, quantities: (a) => [a - 1, 2] }],
  [
    'everything, the allowance, then sold out',
    { stock: 4, buckets: 2, allowance: 2, start: 0, quantities: () => [3, 3, 1, 1, 1] },
  ],
  ['every request refused', { stock: 4, buckets: 2, allowance: 0, start: 0, quantities: () => [4, 5] }],
  ['one bucket, exactly its stock', { stock: 6, buckets: 1, allowance: 0, start: 7, quantities: () => [3, 3] }],
  [
    'one bucket, one unit past its stock',
    { stock: 6, buckets: 1, allowance: 0, start: 7, quantities: () => [3, 3, 1] },
  ],
];

for (const [name, c] of cases) {
  test(`the batch gives what allocate_units gives: ${name}`, async (t) => {
    const { got, want, sku } = await run(c);
    t.deepEqual(got, want);
    await assertInvariants(t, db, sku);
  });
}
