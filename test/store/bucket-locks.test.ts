import test from 'ava';
import pg from 'pg';
import { createProduct, restockProduct } from '../../store/products';
import { until } from '../helpers/poll';
import { assertInvariants, testDb, uniqueSku } from '../helpers/db';

// A restock changes every bucket of its SKU. It used to lock them in whatever order its UPDATE's scan
// met them, where every taker locks them in bucket order: a take holding bucket 0 and waiting for
// bucket 2, a restock holding 2 and waiting for 0, and Postgres aborted one (a whole batch of
// buyers, or the restock). Under load the rows' physical order drifts from bucket order; here it is
// made to, and the restock's own connection reads by sequential scan, as a planner may choose.

const db = testDb(4);
test.after.always(() => db.end());

test('a restock locks its buckets in bucket order: waiting for bucket 0, it holds none of the others', async (t) => {
  const sku = uniqueSku('locks');
  await createProduct(db, { sku, name: 'Runner', priceCents: 100, currency: 'eur', stock: 40, buckets: 4 });
  // Bucket 0's row gets a new version, after the others in the table's pages.
  await db.query('UPDATE stock_buckets SET available = available WHERE sku = $1 AND bucket = 0', [sku]);
  const url = new URL(process.env.DATABASE_URL!);
  url.searchParams.set('options', '-c enable_indexscan=off -c enable_bitmapscan=off');
  const seqScans = new pg.Pool({ connectionString: url.toString(), max: 1 });
  t.teardown(() => seqScans.end());
  // The pool's one connection, which the restock uses: its wait, not another test file's on the same server.
  const { rows: backend } = await seqScans.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');

  const taker = await db.connect();
  t.teardown(() => taker.release());
  await taker.query('BEGIN');
  await taker.query('SELECT 1 FROM stock_buckets WHERE sku = $1 AND bucket = 0 FOR UPDATE', [sku]);
  const restock = restockProduct(seqScans, sku, 4);
  await until('the restock waiting for a bucket lock', async () => {
    const { rows } = await db.query("SELECT 1 FROM pg_stat_activity WHERE pid = $1 AND wait_event_type = 'Lock'", [
      backend[0].pid,
    ]);
    return rows.length > 0 ? true : undefined;
  });
  const other = await db.connect();
  t.teardown(() => other.release());
  await other.query('BEGIN');
  const free = await other.query<{ bucket: number }>(
    'SELECT bucket FROM stock_buckets WHERE sku = $1 ORDER BY bucket FOR UPDATE SKIP LOCKED',
    [sku],
  );
  await other.query('ROLLBACK');
  t.deepEqual(
    free.rows.map((r) => r.bucket),
    [1, 2, 3],
    'the restock holds no bucket while it waits for bucket 0',
  );
  await taker.query('COMMIT');
  t.like(await restock, { total: 44 });
  await assertInvariants(t, db, sku);
});
