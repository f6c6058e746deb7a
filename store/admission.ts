import type { ProductTerms, PurchaseRequest } from '../vocabulary';
import type { Db } from './db';
import { getAvailability, getProduct, termsOf } from './products';
import { getPurchase, openPurchase, purchaseIdFor, recordPurchase, type PurchaseRecord } from './purchases';

/** How long a SKU seen exhausted (nothing available, nothing held) is answered sold-out from memory. */
const SOLD_OUT_MEMORY_MS = 500;

/** What may be decided about a new purchase before any saga runs. */
export type Admission =
  /** This Idempotency-Key already made this purchase: answer from it (or join its saga). */
  | { outcome: 'known'; record: PurchaseRecord }
  /** A new purchase, recorded in `holding`: its saga starts with these terms. */
  | { outcome: 'new'; record: PurchaseRecord; terms: ProductTerms }
  /** Refused before any hold: nothing can come of it. `purchaseId` when the refusal was recorded. */
  | {
      outcome: 'refused';
      reason: 'product_not_found' | 'sold_out' | 'limit_exceeded';
      detail: string;
      purchaseId?: string;
    }
  /** The request contradicts the product or an earlier use of its key. */
  | { outcome: 'invalid'; field: string; message: string };

interface Known {
  terms: ProductTerms;
  maxPerBuyer: number;
}

/**
 * Admits new purchases for one API process: one product read per SKU for the life of the process
 * (name, price, hold length, limits never change after creation), and a short memory of SKUs seen
 * exhausted so the crowd after the last unit costs no row. The saga still takes the hold with the
 * conditional update; this only decides who may try.
 */
export class Admissions {
  private readonly products = new Map<string, Known>();
  private readonly soldOutUntil = new Map<string, number>();

  constructor(private readonly db: Db) {}

  async admit(idempotencyKey: string, req: PurchaseRequest): Promise<Admission> {
    const purchaseId = purchaseIdFor(idempotencyKey);
    // A retry of a known key is answered from its purchase, before any shortcut below.
    const known = await getPurchase(this.db, purchaseId);
    if (known) return this.answerKnown(known, req);
    if (this.isSoldOut(req.sku)) return { outcome: 'refused', reason: 'sold_out', detail: `${req.sku} is sold out` };

    const product = await this.product(req.sku);
    if (!product) return { outcome: 'refused', reason: 'product_not_found', detail: `no product with SKU ${req.sku}` };
    if (req.quantity > product.maxPerBuyer) {
      const detail = `at most ${product.maxPerBuyer} of ${req.sku} per buyer`;
      return { outcome: 'refused', reason: 'limit_exceeded', detail };
    }
    if (req.unitId && !product.terms.hasUnits) {
      return { outcome: 'invalid', field: 'unitId', message: `${req.sku} has no distinct units` };
    }
    if (req.unitId && req.quantity !== 1) {
      return { outcome: 'invalid', field: 'quantity', message: 'must be 1 when unitId is given' };
    }

    const opened = await openPurchase(this.db, idempotencyKey, req);
    // A concurrent request with the same key recorded it first.
    if (!opened.created) return this.answerKnown(opened.record, req);

    const stock = await getAvailability(this.db, req.sku);
    if (stock?.exhausted) {
      this.soldOutUntil.set(req.sku, Date.now() + SOLD_OUT_MEMORY_MS);
      // Recorded as refused so the same key answers the same way, without a saga.
      await recordPurchase(this.db, purchaseId, { status: 'rejected', rejection: 'sold_out', reason: 'sold out' });
      return { outcome: 'refused', reason: 'sold_out', detail: `${req.sku} is sold out`, purchaseId };
    }
    return { outcome: 'new', record: opened.record, terms: product.terms };
  }

  /** Stock changed (a restock, a refund put back on sale): forget that the SKU looked exhausted. */
  stockChanged(sku: string): void {
    this.soldOutUntil.delete(sku);
  }

  private answerKnown(record: PurchaseRecord, req: PurchaseRequest): Admission {
    // Field by field: jsonb does not keep the key order of the object that was stored.
    const was = record.request;
    const same =
      was.sku === req.sku &&
      was.buyerId === req.buyerId &&
      was.quantity === req.quantity &&
      (was.unitId ?? null) === (req.unitId ?? null);
    if (!same)
      return { outcome: 'invalid', field: 'Idempotency-Key', message: 'was already used for a different request' };
    return { outcome: 'known', record };
  }

  private isSoldOut(sku: string): boolean {
    const until = this.soldOutUntil.get(sku);
    if (until === undefined) return false;
    if (until > Date.now()) return true;
    this.soldOutUntil.delete(sku);
    return false;
  }

  private async product(sku: string): Promise<Known | null> {
    const cached = this.products.get(sku);
    if (cached) return cached;
    const p = await getProduct(this.db, sku);
    if (!p) return null;
    const known = { terms: termsOf(p), maxPerBuyer: p.maxPerBuyer };
    this.products.set(sku, known);
    return known;
  }
}
