import type { PurchaseInput } from '../vocabulary';
import type { Db } from './db';
import type { HoldResult } from './hold-types';
import { activeHoldOf, findHold, takeHold } from './holds';
import { getProduct } from './products';

/** Most requests served by one transaction. */
const MAX_BATCH = 500;

interface Waiting {
  req: PurchaseInput;
  resolve: (r: HoldResult) => void;
  reject: (e: unknown) => void;
}

/**
 * Coalesces concurrent hold requests for one SKU in this process into one transaction: while a
 * batch commits, new arrivals queue, and the next batch takes them all (one conditional UPDATE,
 * one multi-row INSERT). A hot row then pays one commit for many buyers; each buyer still gets
 * an exact answer in arrival order. A batch that fails rejects only its own requests.
 * Products of distinct units bypass the desk (their seats are picked row by row).
 */
export class HoldDesk {
  private readonly queues = new Map<string, Waiting[]>();
  private readonly running = new Set<string>();
  private readonly unitsBySku = new Map<string, boolean>();
  private rotation = 0;

  constructor(private readonly db: Db) {}

  /** Takes the hold of one purchase (keyed by its id: a retry finds the hold it already has). */
  take(req: PurchaseInput): Promise<HoldResult> {
    // A named unit is picked row by row, not coalesced.
    if (req.unitId) return takeHold(this.db, req);
    if (req.terms) this.unitsBySku.set(req.sku, req.terms.hasUnits);
    // Queue at once, before any await, so the queue order is the arrival order.
    return new Promise<HoldResult>((resolve, reject) => {
      const queue = this.queues.get(req.sku) ?? [];
      queue.push({ req, resolve, reject });
      this.queues.set(req.sku, queue);
      if (!this.running.has(req.sku)) void this.drain(req.sku);
    });
  }

  /** Whether a SKU has distinct units: from the saga's terms when it carried them, else read once. */
  private async isUnitProduct(sku: string): Promise<boolean> {
    const known = this.unitsBySku.get(sku);
    if (known !== undefined) return known;
    const product = await getProduct(this.db, sku);
    if (!product) return false; // the batch answers product_not_found
    this.unitsBySku.set(sku, product.hasUnits);
    return product.hasUnits;
  }

  private async drain(sku: string): Promise<void> {
    this.running.add(sku);
    try {
      for (;;) {
        // Let the callers woken by the previous batch (and anything else already runnable) queue up
        // first: otherwise the next batch would start with the first of them alone.
        await new Promise<void>((resolve) => setImmediate(resolve));
        const queue = this.queues.get(sku);
        if (!queue || queue.length === 0) break;
        const batch = queue.splice(0, MAX_BATCH);
        try {
          if (await this.isUnitProduct(sku)) {
            // Seats are picked row by row with SKIP LOCKED; there is no counter to coalesce on.
            await Promise.all(batch.map((w) => takeHold(this.db, w.req).then(w.resolve, w.reject)));
            continue;
          }
          const results = await takeHoldsBatch(
            this.db,
            sku,
            batch.map((w) => w.req),
            this.rotation++,
          );
          batch.forEach((w, i) => w.resolve(results[i]));
        } catch (err) {
          for (const w of batch) w.reject(err);
        }
      }
    } finally {
      this.running.delete(sku);
      this.queues.delete(sku);
    }
  }
}

/**
 * Serves many requests for one SKU in one transaction and one round trip (`take_holds_batch`, from
 * store/migrations/003, as 034 has it now): one conditional UPDATE for the batch, one multi-row
 * INSERT. Answers follow arrival order exactly; a throw fails this batch only.
 */
export async function takeHoldsBatch(db: Db, sku: string, reqs: PurchaseInput[], start = 0): Promise<HoldResult[]> {
  const { rows } = await db.query<{
    idx: number;
    outcome: string;
    bucket: number | null;
    oversold: number;
    expires_at: Date | null;
    detail: string | null;
  }>('SELECT * FROM take_holds_batch($1, $2, $3, $4, $5)', [
    sku,
    reqs.map((r) => r.purchaseId),
    reqs.map((r) => r.buyerId),
    reqs.map((r) => r.quantity),
    start,
  ]);
  const product = rows.some((r) => r.outcome === 'limit_exceeded') ? await getProduct(db, sku) : null;
  const results: (HoldResult | undefined)[] = rows.map((r) => {
    const req = reqs[r.idx - 1];
    switch (r.outcome) {
      case 'held':
        return {
          outcome: 'held',
          hold: {
            purchaseId: req.purchaseId,
            sku,
            buyerId: req.buyerId,
            quantity: req.quantity,
            bucket: r.bucket!,
            oversold: r.oversold,
            unitIds: null,
            status: 'active',
            expiresAt: r.expires_at!.toISOString(),
          },
        };
      case 'hold_exists':
        return { outcome: 'hold_exists', heldBy: r.detail ?? 'unknown' };
      case 'limit_exceeded':
        return { outcome: 'limit_exceeded', limit: product?.maxPerBuyer ?? 0, alreadyCommitted: Number(r.detail ?? 0) };
      case 'sold_out':
        return { outcome: 'sold_out' };
      case 'product_not_found':
        return { outcome: 'product_not_found' };
      case 'units_product':
        throw new Error(`${sku} is a product of distinct units; take its holds one by one`);
      default:
        return undefined; // existing, duplicate, lost: answered from what is stored; deferred: below
    }
  });
  // The same buyer twice in one batch: the later requests go again once the earlier one has its answer.
  const deferred = rows.filter((r) => r.outcome === 'deferred').map((r) => r.idx - 1);
  if (deferred.length > 0) {
    const again = await takeHoldsBatch(
      db,
      sku,
      deferred.map((i) => reqs[i]),
      start,
    );
    deferred.forEach((i, k) => (results[i] = again[k]));
  }
  for (let i = 0; i < reqs.length; i++) {
    if (results[i]) continue;
    const hold = await findHold(db, reqs[i].purchaseId);
    const heldBy = hold ? null : await activeHoldOf(db, sku, reqs[i].buyerId);
    results[i] = hold
      ? { outcome: 'held', hold }
      : heldBy
        ? { outcome: 'hold_exists', heldBy }
        : { outcome: 'sold_out' };
  }
  return results as HoldResult[];
}
