import { randomUUID } from 'node:crypto';
import type { ExecutionContext } from 'ava';
import pg from 'pg';
import { createProduct } from '../../store/products';
import { reconcile } from '../../store/reconcile';

/** The Postgres that `npm test` (test/run.ts) started and migrated. */
export function testDb(max = 20): pg.Pool {
  const url = process.env.DATABASE_URL;
  if (!url) throw new Error('DATABASE_URL is not set: run the suite with `npm test`, which starts Postgres');
  return new pg.Pool({ connectionString: url, max });
}

export function uniqueSku(prefix = 'sku'): string {
  return `${prefix}-${randomUUID().slice(0, 8)}`;
}

/**
 * Creates a product of 10 units with a waiting room (one buyer inside at a time, one let in a second)
 * under a new SKU, and returns it; `o` changes the stock or the room.
 */
export async function roomProduct(
  db: pg.Pool,
  prefix: string,
  o: { stock?: number; waitingRoom?: { admitPerSecond: number; maxActive: number } } = {},
): Promise<string> {
  const sku = uniqueSku(prefix);
  const waitingRoom = o.waitingRoom ?? { admitPerSecond: 1, maxActive: 1 };
  await createProduct(db, { sku, name: 'Runner', priceCents: 100, currency: 'eur', stock: o.stock ?? 10, waitingRoom });
  return sku;
}

/**
 * Invariants 1 (no oversell) and 7 (the ledger reconciles) of docs/architecture.md for one SKU: nothing below the floor, nothing sold or held
 * beyond total + allowance, and the ledger recomputes to the stock. Every active hold counts as held,
 * lapsed or not: its units are out of stock until a release or a reclaim gives them back.
 */
export async function assertInvariants(t: ExecutionContext, db: pg.Pool, sku: string): Promise<void> {
  const { rows } = await db.query<{
    total: number;
    allowance: number;
    counted: number;
    held: number;
    sold: number;
    min_bucket_margin: number;
  }>(
    `SELECT p.total, p.oversell_allowance AS allowance,
            (SELECT sum(available) FROM stock_buckets WHERE sku = p.sku)::int AS counted,
            (SELECT min(available - floor) FROM stock_buckets WHERE sku = p.sku)::int AS min_bucket_margin,
            (SELECT coalesce(sum(quantity), 0) FROM holds WHERE sku = p.sku AND status = 'active')::int AS held,
            (SELECT coalesce(sum(quantity), 0) FROM holds WHERE sku = p.sku AND status = 'sold')::int AS sold
       FROM products p WHERE p.sku = $1`,
    [sku],
  );
  const r = rows[0];
  t.truthy(r, `product ${sku} exists`);
  t.true(r.counted >= -r.allowance, `available ${r.counted} >= -allowance ${-r.allowance}`);
  t.true(r.min_bucket_margin >= 0, 'no bucket below its floor');
  t.true(
    r.sold + r.held <= r.total + r.allowance,
    `sold ${r.sold} + held ${r.held} <= total ${r.total} + ${r.allowance}`,
  );
  t.deepEqual(await reconcile(db, sku), [], 'ledger reconciles');
}

/** How many ledger movements of `kind` a purchase has: each is one move of stock, so "once" means 1. */
export async function movements(db: pg.Pool, purchaseId: string, kind: string): Promise<number> {
  const { rows } = await db.query<{ n: number }>(
    'SELECT count(*)::int AS n FROM stock_movements WHERE purchase_id = $1 AND kind = $2',
    [purchaseId, kind],
  );
  return rows[0].n;
}

/** A pool that counts the statements containing `marker` (how many transactions a batching path made). */
export function countingPool(db: pg.Pool, marker: string): { pool: pg.Pool; count: () => number } {
  let n = 0;
  const pool = new Proxy(db, {
    get(target, prop) {
      if (prop === 'query') {
        return (...args: Parameters<pg.Pool['query']>) => {
          if (String(args[0]).includes(marker)) n++;
          return (target.query as (...a: unknown[]) => unknown)(...args);
        };
      }
      const value = Reflect.get(target, prop, target) as unknown;
      return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
    },
  });
  return { pool, count: () => n };
}

/** What one piece of work did to a table: its sequential scans, its rows fetched by index or scan, and its rows written. */
export interface TableStats {
  seqScans: number;
  fetched: number;
  /** Rows inserted, updated or deleted. */
  written: number;
}

/**
 * Runs `run` on `client` inside a transaction it then rolls back, and says what it read and wrote
 * of each table (from `pg_stat_xact_user_tables`; a table it never touched is missing).
 */
export async function tableStats(client: pg.Client, run: () => Promise<unknown>): Promise<Record<string, TableStats>> {
  // pg_stat_xact_* also count what earlier transactions of the connection read and have not yet
  // sent to the shared statistics (sent at most once a second): send them first.
  await client.query('SELECT pg_stat_force_next_flush()');
  await client.query('BEGIN');
  try {
    await run();
    const { rows } = await client.query<{ relname: string; seq: string; fetched: string; written: string }>(
      `SELECT relname, seq_scan AS seq, coalesce(idx_tup_fetch, 0) + seq_tup_read AS fetched,
              n_tup_ins + n_tup_upd + n_tup_del AS written
         FROM pg_stat_xact_user_tables`,
    );
    return Object.fromEntries(
      rows.map((r) => [r.relname, { seqScans: Number(r.seq), fetched: Number(r.fetched), written: Number(r.written) }]),
    );
  } finally {
    await client.query('ROLLBACK');
  }
}
