import test from 'ava';
import pg from 'pg';
import { takeHoldsBatch } from '../../store/hold-desk';
import { convertHold } from '../../store/holds';
import { createProduct } from '../../store/products';
import { assertInvariants, tableStats, testDb, uniqueSku, type TableStats } from '../helpers/db';

// The hold desk's batch is planned once per connection (migration 026): these prove that a plan
// cached while a SKU was small still finds a batch's rows by key when the SKU has thousands of
// holds, and that the batch's answers (the buyer's one hold, the limit, a lapsed hold) stay exact.

const db = testDb(4);
test.after.always(() => db.end());

interface Read extends TableStats {
  /** The plans of the batch's statements that read `holds`, for the failure message. */
  plans: string;
}

/** Runs one batch on `client` in a transaction it rolls back, and counts the `holds` rows it read. */
async function readsOfOneBatch(client: pg.Client, sku: string, ids: string[], buyers: string[]): Promise<Read> {
  const plans: string[] = [];
  const onNotice = (notice: { message?: string }) => {
    if (notice.message?.includes('holds')) plans.push(notice.message);
  };
  client.on('notice', onNotice);
  try {
    const reads = await tableStats(client, async () => {
      await client.query(`LOAD 'auto_explain'`);
      for (const setting of [
        'auto_explain.log_min_duration = 0',
        'auto_explain.log_nested_statements = on',
        'auto_explain.log_analyze = on',
        'auto_explain.log_timing = off',
        'auto_explain.log_level = notice',
      ])
        await client.query(`SET LOCAL ${setting}`);
      await client.query('SELECT * FROM take_holds_batch($1, $2, $3, $4, 0)', [sku, ids, buyers, ids.map(() => 1)]);
      await client.query('SET LOCAL auto_explain.log_min_duration = -1');
    });
    return { ...reads.holds, plans: plans.join('\n') };
  } finally {
    client.off('notice', onNotice);
  }
}

test('a batch plan cached while the SKU was small reads only its own rows once the SKU has 3,000 holds', async (t) => {
  const sku = uniqueSku('plans');
  await createProduct(db, { sku, name: 'Runner', priceCents: 100, currency: 'eur', stock: 10_000, maxPerBuyer: 2 });
  const client = new pg.Client({ connectionString: process.env.DATABASE_URL });
  await client.connect();
  t.teardown(() => client.end());
  const batch = (from: number, n: number) =>
    client.query('SELECT * FROM take_holds_batch($1, $2, $3, $4, 0)', [
      sku,
      Array.from({ length: n }, (_, i) => `${sku}-p${from + i}`),
      Array.from({ length: n }, (_, i) => `b${from + i}`),
      Array.from({ length: n }, () => 1),
    ]);
  // Eight calls on a SKU of a few holds: Postgres caches this connection's generic plans after five.
  for (let i = 0; i < 8; i++) await batch(i, 1);
  for (let i = 0; i < 6; i++) await batch(8 + i * 500, 500);

  // 20 new buyers, 5 buyers who hold the SKU already (a second purchase each), 5 retries of stored purchases.
  const ids = [
    ...Array.from({ length: 20 }, (_, i) => `${sku}-new${i}`),
    ...Array.from({ length: 5 }, (_, i) => `${sku}-again${i}`),
    ...Array.from({ length: 5 }, (_, i) => `${sku}-p${100 + i}`),
  ];
  const buyers = [
    ...Array.from({ length: 20 }, (_, i) => `new${i}`),
    ...Array.from({ length: 5 }, (_, i) => `b${200 + i}`),
    ...Array.from({ length: 5 }, (_, i) => `b${100 + i}`),
  ];
  const read = await readsOfOneBatch(client, sku, ids, buyers);
  t.is(read.seqScans, 0, `no sequential scan of holds:\n${read.plans}`);
  // One probe per purchase and per buyer: the 10 rows that exist, each read at most twice. Reading the
  // SKU's holds (the lapsed holds' lookup through the buyers' index did) would be 3,000 and more.
  t.true(read.fetched <= 40, `${read.fetched} rows of holds read for a batch of 30:\n${read.plans}`);
  await assertInvariants(t, db, sku);
});

test('through the cached plans the batch still answers the buyer rules exactly, and reclaims a lapsed hold', async (t) => {
  const sku = uniqueSku('plans');
  await createProduct(db, { sku, name: 'Runner', priceCents: 100, currency: 'eur', stock: 5, maxPerBuyer: 1 });
  const req = (purchaseId: string, buyerId: string) => ({ purchaseId, sku, buyerId, quantity: 1 });
  // Warm this pool's connections' plans past the five custom ones.
  for (let i = 0; i < 8; i++) await takeHoldsBatch(db, sku, [req(`${sku}-w${i}`, 'warm')]);
  const [first] = await takeHoldsBatch(db, sku, [req(`${sku}-a`, 'alice')]);
  t.is(first.outcome, 'held');
  await convertHold(db, `${sku}-a`);
  await db.query(
    `UPDATE holds SET expires_at = now() - interval '1 hour' WHERE purchase_id = (
       SELECT purchase_id FROM holds WHERE sku = $1 AND buyer_id = 'warm' AND status = 'active')`,
    [sku],
  );
  const results = await takeHoldsBatch(db, sku, [
    req(`${sku}-a2`, 'alice'), // bought her one already
    req(`${sku}-w9`, 'warm'), // the lapsed hold is reclaimed first: a new hold, not hold_exists
    req(`${sku}-b`, 'bob'),
    req(`${sku}-b2`, 'bob'), // the same buyer twice in one batch
  ]);
  t.deepEqual(
    results.map((r) => r.outcome),
    ['limit_exceeded', 'held', 'held', 'hold_exists'],
  );
  const { rows } = await db.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM holds WHERE sku = $1 AND status = 'expired'`,
    [sku],
  );
  t.is(rows[0].n, 1, 'the lapsed hold was reclaimed once');
  await assertInvariants(t, db, sku);
});
