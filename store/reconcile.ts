import type { Db } from './db';

export interface Difference {
  sku: string;
  what: string;
  expected: number;
  actual: number;
}

/**
 * Recomputes every SKU's stock from the movement ledger and compares it with the counters,
 * the holds and the units. An empty list means the ledger reconciles.
 */
export async function reconcile(db: Db, sku?: string): Promise<Difference[]> {
  const { rows } = await db.query<{
    sku: string;
    total: number;
    has_units: boolean;
    counted: number;
    held: number;
    sold: number;
    oversold: number;
    l_total: number;
    l_available: number;
    l_held: number;
    l_sold: number;
    l_oversold: number;
    free_units: number;
    held_units: number;
    sold_units: number;
  }>(
    `SELECT p.sku, p.total, p.has_units,
            (SELECT coalesce(sum(available), 0) FROM stock_buckets b WHERE b.sku = p.sku)::int AS counted,
            (SELECT coalesce(sum(quantity), 0) FROM holds h WHERE h.sku = p.sku AND h.status = 'active')::int AS held,
            (SELECT coalesce(sum(quantity), 0) FROM holds h WHERE h.sku = p.sku AND h.status = 'sold')::int AS sold,
            (SELECT coalesce(sum(oversold), 0) FROM holds h WHERE h.sku = p.sku AND h.status IN ('active', 'sold'))::int AS oversold,
            coalesce(m.total, 0)::int AS l_total, coalesce(m.available, 0)::int AS l_available,
            coalesce(m.held, 0)::int AS l_held, coalesce(m.sold, 0)::int AS l_sold, coalesce(m.oversold, 0)::int AS l_oversold,
            (SELECT count(*) FROM units u WHERE u.sku = p.sku AND u.status = 'free')::int AS free_units,
            (SELECT count(*) FROM units u WHERE u.sku = p.sku AND u.status = 'held')::int AS held_units,
            (SELECT count(*) FROM units u WHERE u.sku = p.sku AND u.status = 'sold')::int AS sold_units
       FROM products p
       LEFT JOIN (SELECT sku, sum(total_delta) AS total, sum(available_delta) AS available, sum(held_delta) AS held,
                         sum(sold_delta) AS sold, sum(oversold_delta) AS oversold
                    FROM stock_movements GROUP BY sku) m ON m.sku = p.sku
      WHERE $1::text IS NULL OR p.sku = $1
      ORDER BY p.sku`,
    [sku ?? null],
  );
  const diffs: Difference[] = [];
  const check = (s: string, what: string, expected: number, actual: number) => {
    if (expected !== actual) diffs.push({ sku: s, what, expected, actual });
  };
  for (const r of rows) {
    check(r.sku, 'total (ledger vs product)', r.l_total, r.total);
    check(r.sku, 'available (ledger vs buckets)', r.l_available, r.counted);
    check(r.sku, 'held (ledger vs active holds)', r.l_held, r.held);
    check(r.sku, 'sold (ledger vs sold holds)', r.l_sold, r.sold);
    check(r.sku, 'oversold (ledger vs holds)', r.l_oversold, r.oversold);
    check(r.sku, 'total = available + held + sold', r.total, r.counted + r.held + r.sold);
    if (r.has_units) {
      check(r.sku, 'free units vs available', r.counted, r.free_units);
      check(r.sku, 'held units vs held', r.held, r.held_units);
      check(r.sku, 'sold units vs sold', r.sold, r.sold_units);
    }
  }
  return diffs;
}
