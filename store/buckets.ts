import type { Tx } from './db';

// The lock order of stock: a SKU's buckets are locked in (SKU, bucket) order by every statement
// that changes more than one of them, so two such statements never wait on each other in a circle.

/**
 * Locks stock buckets in (SKU, bucket) order, the one lock order every taker uses (take_holds_batch,
 * reclaim_expired): a statement that changes several buckets would lock them in whatever order its
 * plan meets them. `buckets[i]` null: every bucket of `skus[i]`.
 */
export async function lockBuckets(tx: Tx, skus: string[], buckets: (number | null)[]): Promise<void> {
  if (skus.length === 0) return;
  await tx.query(
    `SELECT 1 FROM stock_buckets s
       JOIN unnest($1::text[], $2::int[]) AS w(sku, bucket) ON s.sku = w.sku AND (w.bucket IS NULL OR s.bucket = w.bucket)
      ORDER BY s.sku, s.bucket
        FOR UPDATE OF s`,
    [skus, buckets],
  );
}
