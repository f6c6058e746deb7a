import type { Db } from './db';
import { getProduct, takeHold, takeHoldsBatch, type HoldRequest, type HoldResult } from './inventory';

interface Waiting {
  req: HoldRequest;
  resolve: (r: HoldResult) => void;
  reject: (e: unknown) => void;
}

export interface HoldDeskOptions {
  /** Most requests served by one transaction. */
  maxBatch?: number;
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
  private readonly maxBatch: number;
  private rotation = 0;
  batches = 0;

  constructor(
    private readonly db: Db,
    opts: HoldDeskOptions = {},
  ) {
    this.maxBatch = opts.maxBatch ?? 500;
  }

  take(req: HoldRequest): Promise<HoldResult> {
    // A named unit is picked row by row, not coalesced.
    if (req.unitId) return takeHold(this.db, req);
    // Queue at once, before any await, so the queue order is the arrival order.
    return new Promise<HoldResult>((resolve, reject) => {
      const queue = this.queues.get(req.sku) ?? [];
      queue.push({ req, resolve, reject });
      this.queues.set(req.sku, queue);
      if (!this.running.has(req.sku)) void this.drain(req.sku);
    });
  }

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
        const batch = queue.splice(0, this.maxBatch);
        this.batches++;
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
