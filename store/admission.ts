import { LRUCache } from 'lru-cache';
import type { ProductTerms, PurchaseRequest } from '../vocabulary';
import type { Clock } from './clock';
import type { Db } from './db';
import { IN_FLIGHT_RETRY_MS, soldOutDetail, type Gate, type Permit, type SoldOutOutlook } from './gate';
import { getProduct, termsOf } from './products';
import { Batcher } from './batcher';
import { backAtSql } from './hold-types';
import { perPurchaseLimit } from './rules';
import { lookupForAdmission, NotAdmittedError, openPurchase, type AdmissionLookup } from './open-purchase';
import { purchaseIdFor, type PurchaseRecord } from './purchases';
import { giveBackUnspentTurn } from './room';

/** How many given-back tickets a process remembers (a forgotten one is written again, to no effect). */
const GIVEN_BACK_REMEMBERED = 10_000;

/** What may be decided about a new purchase before any saga runs. */
export type Admission =
  /** This Idempotency-Key already made this purchase: answer from it (or join its saga). */
  | { outcome: 'known'; record: PurchaseRecord }
  /** A new purchase, recorded in `holding`: its saga starts with these terms; settle the permit once its hold step answered. */
  | { outcome: 'new'; record: PurchaseRecord; terms: ProductTerms; permit: Permit }
  /**
   * Refused before any hold, and nothing written: a retry of the same key is judged afresh. `limit`:
   * the product term a `limit_exceeded` is about, and its most.
   */
  | {
      outcome: 'refused';
      reason: 'product_not_found' | 'limit_exceeded';
      detail: string;
      limit?: { term: string; max: number };
    }
  /** Before the product's opening: nothing written. */
  | { outcome: 'not_open'; detail: string; opensAt: Date }
  /** This buyer already holds the SKU, or waits in the checkout line for it (the purchase `heldBy`): nothing written. */
  | { outcome: 'hold_exists'; heldBy: string; detail: string }
  /** No unit can be had now. `final`: nothing is held or in flight, nothing can come back. */
  | ({ outcome: 'sold_out'; detail: string } & SoldOutOutlook)
  /** The product has a waiting room, and this request carries no valid, unspent admission to it: nothing written. */
  | { outcome: 'not_admitted'; detail: string }
  /** The request contradicts the product or an earlier use of its key. */
  | { outcome: 'invalid'; field: string; message: string };

/** What admission knows of a product: read once per SKU per process (none of it changes after creation). */
export interface ProductRules {
  terms: ProductTerms;
  maxPerBuyer: number;
  /** A purchase needs an admission from the product's waiting room. */
  room: boolean;
  /** A join (with a room) or a purchase (without) needs a solved bot-check challenge. */
  botCheck: boolean;
  /** No purchase before it. */
  opensAt: Date | null;
}

/**
 * Admits new purchases for one API process: one product read per SKU for the life of the process
 * (name, price, hold length, limits never change after creation), then the gate: only a buyer who
 * can still get a unit gets a permit and a purchase row; everyone else is answered from memory and
 * costs no row and no saga. The saga still takes the hold with the conditional update; this only
 * decides who may try.
 */
export class Admissions {
  private readonly products = new Map<string, ProductRules>();
  /** The known-key and one-hold reads of concurrent requests, one statement per batch. */
  private readonly lookups: Batcher<AdmissionLookup, Awaited<ReturnType<typeof lookupForAdmission>>[number]>;
  /**
   * The admission running in this process for each buyer and SKU: the next request of that buyer for
   * that SKU waits for it, then finds the purchase it recorded (the same one for the same key, else
   * the buyer's place on the SKU) without taking a permit.
   */
  private readonly admitting = new Map<string, { purchaseId: string; admission: Promise<Admission> }>();
  /** Tickets whose turn this process gave back after a sold-out answer (a buyer's retries write nothing more). */
  private readonly givenBack = new LRUCache<string, true>({ max: GIVEN_BACK_REMEMBERED });

  constructor(
    private readonly db: Db,
    private readonly gate: Gate,
    /** Postgres's clock (store/clock.ts): the opening is decided by the clock the admitter opens the room by. */
    private readonly clock: Clock,
  ) {
    this.lookups = new Batcher((asks) => lookupForAdmission(this.db, asks));
  }

  /**
   * `admission`: the waiting-room ticket whose admission token the request carried (verified by the
   * caller); a product with a room needs one, and the purchase's row spends it (store/open-purchase.ts).
   */
  async admit(
    idempotencyKey: string,
    req: PurchaseRequest,
    admission?: { ticketId: string } | null,
  ): Promise<Admission> {
    const purchaseId = purchaseIdFor(idempotencyKey, req.buyerId);
    // Requests of one buyer for one SKU at once are decided one after another: one key's are one
    // purchase (the gate would otherwise count the first's permit against the others and answer them
    // `sold_out`), and another key's is refused by the place the first took (`hold_exists`), before
    // the gate gives it a permit. Nothing is written for a refusal: a waiter is judged afresh.
    const lane = `${req.buyerId}\n${req.sku}`;
    for (let first = this.admitting.get(lane); first; first = this.admitting.get(lane)) {
      const was = await first.admission.catch(() => null);
      const same = first.purchaseId === purchaseId;
      if (same && (was?.outcome === 'new' || was?.outcome === 'known')) return this.answerKnown(was.record, req);
    }
    const mine = this.admitOnce(purchaseId, idempotencyKey, req, admission);
    const entry = { purchaseId, admission: mine };
    this.admitting.set(lane, entry);
    try {
      return await mine;
    } finally {
      if (this.admitting.get(lane) === entry) this.admitting.delete(lane);
    }
  }

  private async admitOnce(
    purchaseId: string,
    idempotencyKey: string,
    req: PurchaseRequest,
    admission?: { ticketId: string } | null,
  ): Promise<Admission> {
    const lookup = { purchaseId, sku: req.sku, buyerId: req.buyerId };
    const lookedUpAt = Date.now();
    // A retry of a known key is answered from its purchase, before any shortcut below.
    const { record: known, heldBy, bought } = await this.lookups.call(lookup);
    if (known) return this.answerKnown(known, req);
    // One place per buyer and SKU (a hold, or a purchase waiting in line): the buyer is told which purchase it is.
    if (heldBy) return holdExists(req, heldBy);
    const product = await this.rulesOf(req.sku);
    if (!product) return { outcome: 'refused', reason: 'product_not_found', detail: `no product with SKU ${req.sku}` };
    // One purchase pays with one method and ships to one address: more units than a rule allows
    // either would be paid for and refunded. Refused before anything is written.
    const cap = perPurchaseLimit(product.terms);
    if (cap && req.quantity > cap.max) {
      const detail = `quantity ${req.quantity} is more than one purchase of ${req.sku} may take: at most ${cap.max} (${cap.term})`;
      return { outcome: 'refused', reason: 'limit_exceeded', detail, limit: cap };
    }
    // The per-buyer limit, counting what the buyer bought: one who bought the most gets no permit or
    // place in the line (the hold step still decides, under the buyer's lock, for one racing a sale).
    if (bought + req.quantity > product.maxPerBuyer) {
      const already = bought ? `; buyer ${req.buyerId} already bought ${bought}` : '';
      const detail = `at most ${product.maxPerBuyer} of ${req.sku} per buyer (maxPerBuyer)${already}`;
      return {
        outcome: 'refused',
        reason: 'limit_exceeded',
        detail,
        limit: { term: 'maxPerBuyer', max: product.maxPerBuyer },
      };
    }
    if (product.opensAt && this.clock.now() < product.opensAt.getTime()) {
      const detail = `${req.sku} opens at ${product.opensAt.toISOString()}`;
      return { outcome: 'not_open', detail, opensAt: product.opensAt };
    }
    if (product.room && !admission) {
      return {
        outcome: 'not_admitted',
        detail: `${req.sku} has a waiting room: an Admission-Token of this buyer is needed`,
      };
    }
    if (req.unitId && !product.terms.hasUnits) {
      return { outcome: 'invalid', field: 'unitId', message: `${req.sku} has no distinct units` };
    }
    if (req.unitId && req.quantity !== 1) {
      return { outcome: 'invalid', field: 'quantity', message: 'must be 1 when unitId is given' };
    }

    const entry = await this.gate.enter(req.sku, req.quantity);
    if (entry.outcome === 'unknown_product') {
      return { outcome: 'refused', reason: 'product_not_found', detail: `no product with SKU ${req.sku}` };
    }
    if (entry.outcome === 'sold_out') {
      // A view read since the lookup may count this key's own hold, taken through another API process:
      // its purchase is committed before its hold, so a second lookup finds it.
      if (entry.viewReadAt >= lookedUpAt) {
        const { record: meanwhile } = await this.lookups.call(lookup);
        if (meanwhile) return this.answerKnown(meanwhile, req);
      }
      if (product.room && admission) await this.giveBack(admission.ticketId, req);
      const { final, retryAt, left } = entry;
      return { outcome: 'sold_out', detail: soldOutDetail(req.sku, entry), final, retryAt, left };
    }
    try {
      const opened = await openPurchase(this.db, idempotencyKey, req, product.room ? admission! : undefined);
      if (opened.outcome === 'created') {
        entry.permit.bind(purchaseId);
        return { outcome: 'new', record: opened.record, terms: product.terms, permit: entry.permit };
      }
      // A request on another API process recorded first (this key's purchase, or the buyer's other
      // place on the SKU): that one holds the permit, and this one gives its own back at once.
      entry.permit.settle();
      if (opened.outcome === 'held') return holdExists(req, opened.heldBy);
      return this.answerKnown(opened.record, req);
    } catch (err) {
      entry.permit.settle();
      if (err instanceof NotAdmittedError) return { outcome: 'not_admitted', detail: err.message };
      throw err;
    }
  }

  /** An admitted buyer told sold out: their unspent turn is given back, once per ticket in this process. */
  private async giveBack(ticketId: string, req: PurchaseRequest): Promise<void> {
    if (this.givenBack.has(ticketId)) return;
    // A write that fails leaves the turn as it was (it ends with its session): the answer stays sold out.
    const written = await giveBackUnspentTurn(this.db, ticketId, req.sku, req.buyerId).then(
      () => true,
      () => false,
    );
    if (written) this.givenBack.set(ticketId, true);
  }

  /**
   * What a buyer whose saga's hold step refused `req` for want of a unit may expect (409 sold-out's
   * `final` and `retryAt`): for a distinct unit, whether it is sold (or no such unit) or held, and until
   * when; else the gate's view, read again. Null when there is no such product.
   */
  async outlook(req: Pick<PurchaseRequest, 'sku' | 'quantity' | 'unitId'>): Promise<SoldOutOutlook | null> {
    if (!req.unitId) return this.gate.outlook(req.sku, req.quantity);
    // A lapsed hold is out of reach for its grace too (a payment may still land), as the gate counts it.
    const { rows } = await this.db.query<{ status: string; back_at: Date | null }>(
      `SELECT u.status,
              ${backAtSql('h.expires_at', 'make_interval(secs => p.hold_grace_seconds)')} AS back_at
         FROM units u JOIN products p ON p.sku = u.sku
         LEFT JOIN holds h ON h.purchase_id = u.purchase_id AND h.status = 'active'
        WHERE u.sku = $1 AND u.unit_id = $2`,
      [req.sku, req.unitId],
    );
    const unit = rows[0];
    if (!unit || unit.status === 'sold') return { final: true };
    const soon = this.clock.now() + IN_FLIGHT_RETRY_MS;
    return { final: false, retryAt: new Date(Math.max(unit.back_at?.getTime() ?? 0, soon)) };
  }

  /** Stock changed (a restock, a refund put back on sale): read it again before the next answer. */
  async stockChanged(sku: string): Promise<void> {
    await this.gate.stockChanged(sku);
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

  /** The product's rules from this process's memory (one read per SKU); null: no such product. */
  async rulesOf(sku: string): Promise<ProductRules | null> {
    const cached = this.products.get(sku);
    if (cached) return cached;
    const p = await getProduct(this.db, sku);
    if (!p) return null;
    const known = {
      terms: termsOf(p),
      maxPerBuyer: p.maxPerBuyer,
      room: p.waitingRoom !== null,
      botCheck: p.botCheck,
      opensAt: p.opensAt,
    };
    this.products.set(sku, known);
    return known;
  }
}

function holdExists(req: PurchaseRequest, heldBy: string): Admission {
  const detail = `buyer ${req.buyerId} already holds ${req.sku}, or waits in line for it (purchase ${heldBy})`;
  return { outcome: 'hold_exists', heldBy, detail };
}
