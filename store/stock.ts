import { createHash } from 'node:crypto';
import type { PurchaseInput } from '../vocabulary';
import type { Tx } from './db';
import { lockBuckets } from './buckets';
import { appendMovements } from './ledger';
import type { Product } from './products';
import type { HoldResult, HoldRow } from './hold-types';

// Taking and returning units: the conditional decrement over bucket rows (and the oversell
// allowance), seat picking, the per-buyer checks of the single path, and the increments that give
// units back. Every statement here runs inside a caller's transaction.

export interface Allocation {
  /** the bucket a release returns the real units to */
  bucket: number;
  /** units taken beyond real stock, from the oversell allowance */
  oversold: number;
}

export function startBucket(purchaseId: string, buckets: number): number {
  if (buckets <= 1) return 0;
  return createHash('sha1').update(purchaseId).digest().readUInt32BE(0) % buckets;
}

/**
 * Returns this SKU's lapsed holds to stock (status `expired`, one increment each). Rows another
 * transaction is already reclaiming or converting are skipped, never waited on.
 */
export async function reclaimExpired(tx: Tx, sku: string): Promise<number> {
  const { rows } = await tx.query<{ n: number }>('SELECT reclaim_expired($1) AS n', [sku]);
  return rows[0].n;
}

/** Increments stock for holds that just left `active` (or `sold`, for restocks); frees their units. */
export async function returnToStock(
  tx: Tx,
  holds: HoldRow[],
  kind: 'release' | 'expire' | 'refund_restock',
): Promise<void> {
  // Real units go back to the hold's bucket; units taken from the oversell allowance go back to
  // bucket 0, whose floor is the allowance, so they can only be sold again as oversold.
  const parts = holds.flatMap((h) => [
    { sku: h.sku, bucket: h.bucket, qty: h.quantity - h.oversold },
    { sku: h.sku, bucket: 0, qty: h.oversold },
  ]);
  const touched = parts.filter((x) => x.qty > 0);
  await lockBuckets(
    tx,
    touched.map((x) => x.sku),
    touched.map((x) => x.bucket),
  );
  await tx.query(
    `UPDATE stock_buckets s SET available = s.available + v.qty
       FROM (SELECT sku, bucket, sum(qty)::int AS qty
               FROM unnest($1::text[], $2::int[], $3::int[]) AS u(sku, bucket, qty) GROUP BY sku, bucket) v
      WHERE s.sku = v.sku AND s.bucket = v.bucket AND v.qty > 0`,
    [parts.map((x) => x.sku), parts.map((x) => x.bucket), parts.map((x) => x.qty)],
  );
  const withUnits = holds.filter((h) => h.unit_ids && h.unit_ids.length > 0);
  if (withUnits.length > 0) {
    await tx.query(`UPDATE units SET status = 'free', purchase_id = NULL WHERE purchase_id = ANY($1::text[])`, [
      withUnits.map((h) => h.purchase_id),
    ]);
  }
  await appendMovements(
    tx,
    holds.map((h) => ({
      sku: h.sku,
      purchaseId: h.purchase_id,
      kind,
      available: h.quantity,
      ...(kind === 'refund_restock' ? { sold: -h.quantity } : { held: -h.quantity }),
      oversold: -h.oversold,
    })),
  );
}

export interface BuyerCommitment {
  committed: number;
  activePurchase: string | null;
}

export async function buyerCommitments(tx: Tx, sku: string, buyerIds: string[]): Promise<Map<string, BuyerCommitment>> {
  const { rows } = await tx.query<{ buyer_id: string; committed: number; active_purchase: string | null }>(
    `SELECT buyer_id, coalesce(sum(quantity), 0)::int AS committed,
            max(purchase_id) FILTER (WHERE status = 'active') AS active_purchase
       FROM holds WHERE sku = $1 AND buyer_id = ANY($2::text[]) AND status IN ('active', 'sold')
      GROUP BY buyer_id`,
    [sku, buyerIds],
  );
  return new Map(rows.map((r) => [r.buyer_id, { committed: r.committed, activePurchase: r.active_purchase }]));
}

export function checkBuyer(
  product: Product,
  req: PurchaseInput,
  c: BuyerCommitment | undefined,
): Exclude<HoldResult, { outcome: 'held' }> | null {
  if (c?.activePurchase) return { outcome: 'hold_exists', heldBy: c.activePurchase };
  const committed = c?.committed ?? 0;
  if (committed + req.quantity > product.maxPerBuyer) {
    return { outcome: 'limit_exceeded', limit: product.maxPerBuyer, alreadyCommitted: committed };
  }
  return null;
}

/** Picks free units (any, or the named one) without waiting on rows other buyers are taking. */
export async function pickUnits(
  tx: Tx,
  sku: string,
  purchaseId: string,
  quantity: number,
  unitId?: string,
): Promise<string[]> {
  const { rows } = await tx.query<{ unit_id: string }>(
    `WITH picked AS (
       SELECT unit_id FROM units
        WHERE sku = $1 AND status = 'free' AND ($4::text IS NULL OR unit_id = $4)
        ORDER BY unit_id LIMIT $3 FOR UPDATE SKIP LOCKED)
     UPDATE units u SET status = 'held', purchase_id = $2 FROM picked WHERE u.sku = $1 AND u.unit_id = picked.unit_id
     RETURNING u.unit_id`,
    [sku, purchaseId, quantity, unitId ?? null],
  );
  return rows.map((r) => r.unit_id);
}

export class Refusal extends Error {
  constructor(readonly result: Exclude<HoldResult, { outcome: 'held' }>) {
    super(result.outcome);
  }
}

/**
 * Takes stock from the counters for one request: a conditional UPDATE on one bucket after
 * another (real stock only), and when none can serve it alone, a locked allocation across all
 * buckets that may also draw on the oversell allowance. Throws Refusal when sold out.
 */
export async function takeStock(tx: Tx, product: Product, purchaseId: string, quantity: number): Promise<Allocation> {
  const n = product.buckets;
  const start = startBucket(purchaseId, n);
  if (n === 1) {
    const res = await tx.query(
      'UPDATE stock_buckets SET available = available - $2 WHERE sku = $1 AND bucket = 0 AND available >= $2',
      [product.sku, quantity],
    );
    if (res.rowCount === 1) return { bucket: 0, oversold: 0 };
  } else {
    // Any bucket that can serve it alone and that no one else is writing, nearest to this
    // purchase's own bucket first. A row lock kept by a failed attempt could deadlock with the
    // ordered locking below, so a miss rolls back to the savepoint, which drops such locks.
    await tx.query('SAVEPOINT fast_take');
    const { rows } = await tx.query<{ bucket: number }>(
      `UPDATE stock_buckets SET available = available - $3
        WHERE sku = $1 AND bucket = (
          SELECT bucket FROM stock_buckets WHERE sku = $1 AND available >= $3
           ORDER BY (bucket - $2 + $4) % $4 LIMIT 1 FOR UPDATE SKIP LOCKED)
       RETURNING bucket`,
      [product.sku, start, quantity, n],
    );
    if (rows[0]) return { bucket: rows[0].bucket, oversold: 0 };
    await tx.query('ROLLBACK TO SAVEPOINT fast_take');
  }
  // An unlocked look first: when even the allowance cannot serve it, say so without queueing on locks.
  const { rows } = await tx.query<{ room: number }>(
    'SELECT coalesce(sum(available - floor), 0)::int AS room FROM stock_buckets WHERE sku = $1',
    [product.sku],
  );
  if (rows[0].room < quantity) throw new Refusal({ outcome: 'sold_out' });
  // Across buckets and into the allowance, by the same rule as the hold desk (store/migrations/003).
  const { rows: taken } = await tx.query<Allocation>('SELECT * FROM take_stock($1, $2, $3)', [
    product.sku,
    quantity,
    start,
  ]);
  if (!taken[0]) throw new Refusal({ outcome: 'sold_out' });
  return taken[0];
}
