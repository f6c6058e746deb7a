import test from 'ava';
import pg from 'pg';
import { activeHoldOf } from '../../store/holds';
import { lookupForAdmission } from '../../store/open-purchase';
import { createProduct } from '../../store/products';
import { tableStats, testDb, uniqueSku } from '../helpers/db';

// Every buyer's purchase request is looked up before the gate answers it (store/admission.ts): the
// lookup must read the buyer's own rows, not the SKU's, however many holds the SKU has.

const db = testDb(4);
test.after.always(() => db.end());

test('looking up 30 buyers of a SKU with 3,000 active holds reads their own rows only, and finds a hold and a sale', async (t) => {
  const sku = uniqueSku('lookup');
  await createProduct(db, { sku, name: 'Runner', priceCents: 100, currency: 'eur', stock: 10_000, maxPerBuyer: 2 });
  for (let from = 0; from < 3_000; from += 500) {
    const n = 500;
    await db.query('SELECT * FROM take_holds_batch($1, $2, $3, $4, 0)', [
      sku,
      Array.from({ length: n }, (_, i) => `${sku}-p${from + i}`),
      Array.from({ length: n }, (_, i) => `b${from + i}`),
      Array.from({ length: n }, () => 1),
    ]);
  }
  // b1 bought its unit; b0 still holds its own.
  await db.query(`UPDATE holds SET status = 'sold' WHERE purchase_id = $1`, [`${sku}-p1`]);
  const asks = [
    { purchaseId: `${sku}-again0`, sku, buyerId: 'b0' },
    { purchaseId: `${sku}-again1`, sku, buyerId: 'b1' },
    ...Array.from({ length: 28 }, (_, i) => ({ purchaseId: `${sku}-new${i}`, sku, buyerId: `new${i}` })),
  ];
  const client = new pg.Client({ connectionString: process.env.DATABASE_URL });
  await client.connect();
  t.teardown(() => client.end());
  let found: Awaited<ReturnType<typeof lookupForAdmission>> = [];
  const read = await tableStats(client, async () => {
    found = await lookupForAdmission(client, asks);
  });
  t.like(found[0], { record: null, heldBy: `${sku}-p0`, bought: 0 });
  t.like(found[1], { record: null, heldBy: null, bought: 1 });
  t.true(
    found.slice(2).every((f) => f.record === null && f.heldBy === null && f.bought === 0),
    'the new buyers hold nothing',
  );
  // A probe or two per ask: reading the SKU's active holds for each would be 3,000 rows an ask.
  t.true(read.holds.fetched <= 60, `${read.holds.fetched} rows of holds read for 30 asks`);

  // The hold desk names the buyer's hold the same way when it refuses a second one (hold_exists).
  const named: { heldBy?: string | null } = {};
  const reads = await tableStats(client, async () => {
    named.heldBy = await activeHoldOf(client, sku, 'b0');
  });
  t.is(named.heldBy, `${sku}-p0`);
  t.true(reads.holds.fetched <= 5, `${reads.holds.fetched} rows of holds read to name one buyer's hold`);
});
