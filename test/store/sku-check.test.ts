import test from 'ava';
import pg from 'pg';
import { takeHoldsBatch } from '../../store/hold-desk';
import { createProduct } from '../../store/products';
import { assertInvariants, uniqueSku } from '../helpers/db';
import { createOwnDatabase } from '../helpers/own-database';

// Migration 036: holds and ledger rows name an existing product, checked once per statement (the
// foreign keys they replace were checked once per row). A row that names no product fails its whole
// statement with the foreign key's error code, and writes nothing.

// A database of this file's own: a TRUNCATE, even one refused, locks every table it names, and would
// deadlock with other files' sales on the shared one.
let db: pg.Pool;
test.before(async () => {
  db = new pg.Pool({ connectionString: await createOwnDatabase(), max: 6 });
});
test.after.always(() => db?.end());

async function product(): Promise<string> {
  const sku = uniqueSku('fk');
  await createProduct(db, { sku, name: 'Runner', priceCents: 100, currency: 'eur', stock: 5 });
  return sku;
}

const count = async (table: string, sku: string) =>
  (await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${table} WHERE sku = $1`, [sku])).rows[0].n;

test('a hold that names no product is refused with the foreign-key code, and a batch with one such row writes none', async (t) => {
  const sku = await product();
  const ghost = uniqueSku('ghost');
  await t.throwsAsync(
    db.query(
      `INSERT INTO holds (purchase_id, sku, buyer_id, quantity, bucket, status, expires_at)
       VALUES ($1, $2, 'b1', 1, 0, 'active', now() + interval '1 minute'),
              ($3, $4, 'b2', 1, 0, 'active', now() + interval '1 minute')`,
      [`${sku}-ok`, sku, `${ghost}-no`, ghost],
    ),
    { code: '23503', message: new RegExp(`holds names no product: sku ${ghost}`) },
  );
  t.is(await count('holds', sku), 0);
  t.is(await count('holds', ghost), 0);
});

test('a ledger row that names no product is refused, one that does is written', async (t) => {
  const sku = await product();
  const ghost = uniqueSku('ghost');
  await t.throwsAsync(
    db.query(`INSERT INTO stock_movements (sku, kind, total_delta, available_delta) VALUES ($1, 'restock', 1, 1)`, [
      ghost,
    ]),
    { code: '23503' },
  );
  t.is(await count('stock_movements', ghost), 0);
  const before = await count('stock_movements', sku);
  await db.query(`INSERT INTO stock_movements (sku, kind) VALUES ($1, 'restock')`, [sku]);
  t.is(await count('stock_movements', sku), before + 1);
});

test('the hold desk still takes its batch, and a hold cannot move to another product', async (t) => {
  const sku = await product();
  const other = await product();
  const reqs = Array.from({ length: 3 }, (_, i) => ({ purchaseId: `${sku}-${i}`, sku, buyerId: `b${i}`, quantity: 1 }));
  const results = await takeHoldsBatch(db, sku, reqs);
  t.deepEqual(
    results.map((r) => r.outcome),
    ['held', 'held', 'held'],
  );
  await t.throwsAsync(db.query('UPDATE holds SET sku = $1 WHERE purchase_id = $2', [other, `${sku}-0`]), {
    code: '23503',
  });
  // A status change, as every saga makes, is not checked.
  await db.query(`UPDATE holds SET status = 'released' WHERE purchase_id = $1`, [`${sku}-1`]);
  await db.query(
    `INSERT INTO stock_movements (sku, purchase_id, kind, available_delta, held_delta) VALUES ($1, $2, 'release', 1, -1)`,
    [sku, `${sku}-1`],
  );
  await db.query('UPDATE stock_buckets SET available = available + 1 WHERE sku = $1', [sku]);
  t.is(await count('holds', sku), 3);
  await assertInvariants(t, db, sku);
});

/** Runs `fn` in a transaction that is rolled back: what it tried leaves nothing behind. */
async function tried<T>(fn: (c: pg.PoolClient) => Promise<T>): Promise<T> {
  const c = await db.connect();
  try {
    await c.query('BEGIN');
    return await fn(c);
  } finally {
    await c.query('ROLLBACK');
    c.release();
  }
}

// Serial: alone, before the others (the TRUNCATE's locks).
test.serial(
  'a product that holds or ledger rows name is not deleted, renamed or truncated, even without its buckets',
  async (t) => {
    const sku = await product();
    await takeHoldsBatch(db, sku, [{ purchaseId: `${sku}-0`, sku, buyerId: 'b0', quantity: 1 }]);
    // Without its buckets (whose own key would refuse first), only the holds and the ledger keep it.
    const refusal = { code: '23503', message: new RegExp(`product ${sku} is named by holds or ledger rows`) };
    await t.throwsAsync(
      tried(async (c) => {
        await c.query('DELETE FROM stock_buckets WHERE sku = $1', [sku]);
        await c.query('DELETE FROM products WHERE sku = $1', [sku]);
      }),
      refusal,
    );
    await t.throwsAsync(
      tried(async (c) => {
        await c.query('DELETE FROM stock_buckets WHERE sku = $1', [sku]);
        await c.query('UPDATE products SET sku = $2 WHERE sku = $1', [sku, `${sku}-renamed`]);
      }),
      refusal,
    );
    await t.throwsAsync(
      tried((c) => c.query('TRUNCATE products CASCADE')),
      { code: '23503', message: /cannot be truncated/ },
    );
    // A product nothing names yet goes, as before.
    const unused = uniqueSku('unused');
    await tried(async (c) => {
      await c.query(`INSERT INTO products (sku, name, price_cents, currency, total) VALUES ($1, 'x', 1, 'eur', 0)`, [
        unused,
      ]);
      t.is((await c.query('DELETE FROM products WHERE sku = $1', [unused])).rowCount, 1);
    });
    t.is(await count('holds', sku), 1);
    await assertInvariants(t, db, sku);
  },
);

test('a hold being written share-locks its product: a delete meanwhile waits for it', async (t) => {
  const sku = await product();
  const writer = await db.connect();
  try {
    await writer.query('BEGIN');
    await writer.query(
      `INSERT INTO holds (purchase_id, sku, buyer_id, quantity, bucket, status, expires_at)
       VALUES ($1, $2, 'b1', 1, 0, 'active', now() + interval '1 minute')`,
      [`${sku}-open`, sku],
    );
    // The hold is not committed, so nothing else names the product yet: only the lock keeps it.
    await t.throwsAsync(
      tried(async (c) => {
        await c.query(`SET LOCAL lock_timeout = '200ms'`);
        await c.query('DELETE FROM stock_buckets WHERE sku = $1', [sku]);
        await c.query('DELETE FROM products WHERE sku = $1', [sku]);
      }),
      { code: '55P03' },
    );
  } finally {
    await writer.query('ROLLBACK');
    writer.release();
  }
  t.is(await count('holds', sku), 0);
});
