import { createHash } from 'node:crypto';
import { PG, constraintOf, pgCode, withTx, type Db, type Tx } from './db';

/**
 * The inventory core: the only code that writes stock. Every decrement is a conditional UPDATE
 * guarded by `available - qty >= floor` (with a CHECK constraint behind it), every increment is
 * one guarded state transition of one hold, and every movement is appended to `stock_movements`
 * in the same transaction.
 */

export interface Product {
  sku: string;
  name: string;
  priceCents: number;
  currency: string;
  total: number;
  buckets: number;
  holdSeconds: number;
  maxPerBuyer: number;
  oversellAllowance: number;
  hasUnits: boolean;
  waitingRoom: { admitPerSecond: number; maxActive: number } | null;
}

export interface NewProduct {
  sku: string;
  name: string;
  priceCents: number;
  currency: string;
  stock: number;
  buckets?: number;
  holdSeconds?: number;
  maxPerBuyer?: number;
  oversellAllowance?: number;
  waitingRoom?: { admitPerSecond: number; maxActive: number } | null;
  units?: string[];
}

export type HoldStatus = 'active' | 'released' | 'expired' | 'sold' | 'restocked';

export interface Hold {
  purchaseId: string;
  sku: string;
  buyerId: string;
  quantity: number;
  bucket: number;
  oversold: number;
  unitIds: string[] | null;
  status: HoldStatus;
  expiresAt: string;
}

export interface HoldRequest {
  purchaseId: string;
  sku: string;
  buyerId: string;
  quantity: number;
  unitId?: string;
}

export type HoldResult =
  | { outcome: 'held'; hold: Hold; existing: boolean }
  | { outcome: 'sold_out' }
  | { outcome: 'hold_exists'; heldBy: string }
  | { outcome: 'limit_exceeded'; limit: number; alreadyCommitted: number }
  | { outcome: 'unit_unavailable'; unitId: string }
  | { outcome: 'product_not_found' };

export interface Availability {
  sku: string;
  total: number;
  available: number;
  held: number;
  sold: number;
  oversold: number;
  soldOut: boolean;
  /** Nothing available and no active hold that could come back: the sold-out answer is final until a restock. */
  exhausted: boolean;
}

type MovementKind = 'create' | 'restock' | 'hold' | 'release' | 'expire' | 'sell' | 'retake' | 'refund_restock';

interface Movement {
  sku: string;
  purchaseId: string | null;
  kind: MovementKind;
  total?: number;
  available?: number;
  held?: number;
  sold?: number;
  oversold?: number;
}

// ---------------------------------------------------------------------------------------------
// Rows

interface ProductRow {
  sku: string;
  name: string;
  price_cents: number;
  currency: string;
  total: number;
  buckets: number;
  hold_seconds: number;
  max_per_buyer: number;
  oversell_allowance: number;
  has_units: boolean;
  waiting_room: Product['waitingRoom'];
}

interface HoldRow {
  purchase_id: string;
  sku: string;
  buyer_id: string;
  quantity: number;
  bucket: number;
  oversold: number;
  unit_ids: string[] | null;
  status: HoldStatus;
  expires_at: Date;
}

function toProduct(r: ProductRow): Product {
  return {
    sku: r.sku,
    name: r.name,
    priceCents: r.price_cents,
    currency: r.currency,
    total: r.total,
    buckets: r.buckets,
    holdSeconds: r.hold_seconds,
    maxPerBuyer: r.max_per_buyer,
    oversellAllowance: r.oversell_allowance,
    hasUnits: r.has_units,
    waitingRoom: r.waiting_room,
  };
}

export function toHold(r: HoldRow): Hold {
  return {
    purchaseId: r.purchase_id,
    sku: r.sku,
    buyerId: r.buyer_id,
    quantity: r.quantity,
    bucket: r.bucket,
    oversold: r.oversold,
    unitIds: r.unit_ids,
    status: r.status,
    expiresAt: r.expires_at.toISOString(),
  };
}

// ---------------------------------------------------------------------------------------------
// Ledger

export async function appendMovements(tx: Tx, movements: Movement[]): Promise<void> {
  if (movements.length === 0) return;
  await tx.query(
    `INSERT INTO stock_movements (sku, purchase_id, kind, total_delta, available_delta, held_delta, sold_delta, oversold_delta)
     SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::int[], $5::int[], $6::int[], $7::int[], $8::int[])`,
    [
      movements.map((m) => m.sku),
      movements.map((m) => m.purchaseId),
      movements.map((m) => m.kind),
      movements.map((m) => m.total ?? 0),
      movements.map((m) => m.available ?? 0),
      movements.map((m) => m.held ?? 0),
      movements.map((m) => m.sold ?? 0),
      movements.map((m) => m.oversold ?? 0),
    ],
  );
}

// ---------------------------------------------------------------------------------------------
// Catalogue

export class ProductExistsError extends Error {
  readonly type = 'product-exists';
}

/** Creates a product, its bucket rows (stock spread evenly) and, for seats, one row per unit. */
export async function createProduct(db: Db, input: NewProduct): Promise<Product> {
  const units = input.units ?? null;
  const stock = units ? units.length : input.stock;
  // Seats are picked row by row, so splitting their count buys nothing; allowance makes no sense either.
  const buckets = units ? 1 : Math.max(1, input.buckets ?? 1);
  const allowance = units ? 0 : (input.oversellAllowance ?? 0);
  try {
    return await withTx(db, async (tx) => {
      const { rows } = await tx.query<ProductRow>(
        `INSERT INTO products (sku, name, price_cents, currency, total, buckets, hold_seconds, max_per_buyer,
                               oversell_allowance, has_units, waiting_room)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11) RETURNING *`,
        [
          input.sku,
          input.name,
          input.priceCents,
          input.currency.toLowerCase(),
          stock,
          buckets,
          input.holdSeconds ?? 600,
          input.maxPerBuyer ?? 1,
          allowance,
          units !== null,
          input.waitingRoom ? JSON.stringify(input.waitingRoom) : null,
        ],
      );
      const split = Array.from(
        { length: buckets },
        (_, i) => Math.floor(stock / buckets) + (i < stock % buckets ? 1 : 0),
      );
      await tx.query(
        `INSERT INTO stock_buckets (sku, bucket, available, floor)
         SELECT $1, b, a, CASE WHEN b = 0 THEN -$4::int ELSE 0 END FROM unnest($2::int[], $3::int[]) AS v(b, a)`,
        [input.sku, split.map((_, i) => i), split, allowance],
      );
      if (units) {
        await tx.query(`INSERT INTO units (sku, unit_id) SELECT $1, u FROM unnest($2::text[]) AS u`, [
          input.sku,
          units,
        ]);
      }
      await appendMovements(tx, [{ sku: input.sku, purchaseId: null, kind: 'create', total: stock, available: stock }]);
      return toProduct(rows[0]);
    });
  } catch (err) {
    if (pgCode(err) === PG.uniqueViolation && constraintOf(err) === 'products_pkey') {
      throw new ProductExistsError(`product ${input.sku} already exists`);
    }
    throw err;
  }
}

export async function getProduct(db: Db | Tx, sku: string): Promise<Product | null> {
  const { rows } = await db.query<ProductRow>('SELECT * FROM products WHERE sku = $1', [sku]);
  return rows[0] ? toProduct(rows[0]) : null;
}

/** Adds `quantity` units of a counted product to total, spread over its buckets. Null when the SKU is unknown. */
export async function restockProduct(db: Db, sku: string, quantity: number): Promise<Product | null> {
  return withTx(db, async (tx) => {
    const { rows } = await tx.query<ProductRow>(
      'UPDATE products SET total = total + $2 WHERE sku = $1 AND NOT has_units RETURNING *',
      [sku, quantity],
    );
    if (!rows[0]) return null;
    await tx.query(
      `UPDATE stock_buckets SET available = available + $2::int / $3::int + CASE WHEN bucket < $2::int % $3::int THEN 1 ELSE 0 END
        WHERE sku = $1`,
      [sku, quantity, rows[0].buckets],
    );
    await appendMovements(tx, [{ sku, purchaseId: null, kind: 'restock', total: quantity, available: quantity }]);
    return toProduct(rows[0]);
  });
}

/**
 * Stock as a buyer should see it. A hold past its `expires_at` counts as available even when no
 * sweeper or taker has returned it yet.
 */
export async function getAvailability(db: Db | Tx, sku: string): Promise<Availability | null> {
  const { rows } = await db.query<{
    total: number;
    oversell_allowance: number;
    counted: number;
    held: number;
    lapsed: number;
    sold: number;
    oversold: number;
  }>(
    `SELECT p.total, p.oversell_allowance,
            (SELECT coalesce(sum(available), 0)::int FROM stock_buckets WHERE sku = p.sku) AS counted,
            coalesce(sum(h.quantity) FILTER (WHERE h.status = 'active' AND h.expires_at > now()), 0)::int AS held,
            coalesce(sum(h.quantity) FILTER (WHERE h.status = 'active' AND h.expires_at <= now()), 0)::int AS lapsed,
            coalesce(sum(h.quantity) FILTER (WHERE h.status = 'sold'), 0)::int AS sold,
            coalesce(sum(h.oversold) FILTER (WHERE h.status = 'sold' OR (h.status = 'active' AND h.expires_at > now())), 0)::int AS oversold
       FROM products p LEFT JOIN holds h ON h.sku = p.sku AND h.status IN ('active', 'sold')
      WHERE p.sku = $1
      GROUP BY p.sku, p.total, p.oversell_allowance`,
    [sku],
  );
  const r = rows[0];
  if (!r) return null;
  const raw = r.counted + r.lapsed;
  const available = Math.max(0, raw);
  const allowanceLeft = r.oversell_allowance - r.oversold;
  const soldOut = available + Math.max(0, allowanceLeft) <= 0;
  return {
    sku,
    total: r.total,
    available,
    held: r.held,
    sold: r.sold,
    oversold: r.oversold,
    soldOut,
    exhausted: soldOut && r.held === 0,
  };
}

// ---------------------------------------------------------------------------------------------
// Expiry

/**
 * Returns this SKU's lapsed holds to stock (status `expired`, one increment each). Rows another
 * transaction is already reclaiming or converting are skipped, never waited on.
 */
export async function reclaimExpired(tx: Tx, sku: string): Promise<number> {
  const { rows } = await tx.query<{ n: number }>('SELECT reclaim_expired($1) AS n', [sku]);
  return rows[0].n;
}

/** Sweeper: reclaims lapsed holds of every SKU. Returns how many holds it expired. */
export async function sweepExpired(db: Db): Promise<number> {
  const { rows } = await db.query<{ sku: string }>(
    `SELECT DISTINCT sku FROM holds WHERE status = 'active' AND expires_at <= now()`,
  );
  let expired = 0;
  for (const { sku } of rows) expired += await withTx(db, (tx) => reclaimExpired(tx, sku));
  return expired;
}

/** Increments stock for holds that just left `active` (or `sold`, for restocks); frees their units. */
async function returnToStock(tx: Tx, holds: HoldRow[], kind: 'release' | 'expire' | 'refund_restock'): Promise<void> {
  // Real units go back to the hold's bucket; units taken from the oversell allowance go back to
  // bucket 0, whose floor is the allowance, so they can only be sold again as oversold.
  const parts = holds.flatMap((h) => [
    { sku: h.sku, bucket: h.bucket, qty: h.quantity - h.oversold },
    { sku: h.sku, bucket: 0, qty: h.oversold },
  ]);
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

// ---------------------------------------------------------------------------------------------
// Taking stock

export interface Allocation {
  /** the bucket a release returns the real units to */
  bucket: number;
  /** units taken beyond real stock, from the oversell allowance */
  oversold: number;
}

function startBucket(purchaseId: string, buckets: number): number {
  if (buckets <= 1) return 0;
  return createHash('sha1').update(purchaseId).digest().readUInt32BE(0) % buckets;
}

// ---------------------------------------------------------------------------------------------
// Taking holds

async function findHold(db: Db | Tx, purchaseId: string): Promise<Hold | null> {
  const { rows } = await db.query<HoldRow>('SELECT * FROM holds WHERE purchase_id = $1', [purchaseId]);
  return rows[0] ? toHold(rows[0]) : null;
}

export { findHold as getHold };

interface BuyerCommitment {
  committed: number;
  activePurchase: string | null;
}

async function buyerCommitments(tx: Tx, sku: string, buyerIds: string[]): Promise<Map<string, BuyerCommitment>> {
  const { rows } = await tx.query<{ buyer_id: string; committed: number; active_purchase: string | null }>(
    `SELECT buyer_id, coalesce(sum(quantity), 0)::int AS committed,
            max(purchase_id) FILTER (WHERE status = 'active') AS active_purchase
       FROM holds WHERE sku = $1 AND buyer_id = ANY($2::text[]) AND status IN ('active', 'sold')
      GROUP BY buyer_id`,
    [sku, buyerIds],
  );
  return new Map(rows.map((r) => [r.buyer_id, { committed: r.committed, activePurchase: r.active_purchase }]));
}

function checkBuyer(
  product: Product,
  req: HoldRequest,
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
async function pickUnits(
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

class Refusal extends Error {
  constructor(readonly result: Exclude<HoldResult, { outcome: 'held' }>) {
    super(result.outcome);
  }
}

/**
 * Takes stock from the counters for one request: a conditional UPDATE on one bucket after
 * another (real stock only), and when none can serve it alone, a locked allocation across all
 * buckets that may also draw on the oversell allowance. Throws Refusal when sold out.
 */
async function takeStock(tx: Tx, product: Product, purchaseId: string, quantity: number): Promise<Allocation> {
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
  // Across buckets and into the allowance, by the same rule as the hold desk (db/migrations/003).
  const { rows: taken } = await tx.query<Allocation>('SELECT * FROM take_stock($1, $2, $3)', [
    product.sku,
    quantity,
    start,
  ]);
  if (!taken[0]) throw new Refusal({ outcome: 'sold_out' });
  return taken[0];
}

/**
 * Takes a hold for one purchase, keyed by `purchaseId`: calling it again returns the existing
 * hold and takes nothing. Returns this SKU's lapsed holds to stock first, in the same transaction.
 * Business refusals (sold out, buyer already holding, limit, seat taken) are results, not throws.
 */
export async function takeHold(db: Db, req: HoldRequest): Promise<HoldResult> {
  const existing = await findHold(db, req.purchaseId);
  if (existing) return { outcome: 'held', hold: existing, existing: true };
  try {
    return await withTx(db, async (tx) => {
      await reclaimExpired(tx, req.sku);
      const product = await getProduct(tx, req.sku);
      if (!product) throw new Refusal({ outcome: 'product_not_found' });
      const refusal = checkBuyer(product, req, (await buyerCommitments(tx, req.sku, [req.buyerId])).get(req.buyerId));
      if (refusal) throw new Refusal(refusal);
      let unitIds: string[] | null = null;
      if (product.hasUnits) {
        unitIds = await pickUnits(tx, req.sku, req.purchaseId, req.quantity, req.unitId);
        if (unitIds.length < req.quantity) {
          throw new Refusal(req.unitId ? { outcome: 'unit_unavailable', unitId: req.unitId } : { outcome: 'sold_out' });
        }
      } else if (req.unitId) {
        throw new Refusal({ outcome: 'unit_unavailable', unitId: req.unitId });
      }
      const alloc = await takeStock(tx, product, req.purchaseId, req.quantity);
      const { rows } = await tx.query<HoldRow>(
        `INSERT INTO holds (purchase_id, sku, buyer_id, quantity, bucket, oversold, unit_ids, status, expires_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, 'active', now() + make_interval(secs => $8))
         RETURNING *`,
        [
          req.purchaseId,
          req.sku,
          req.buyerId,
          req.quantity,
          alloc.bucket,
          alloc.oversold,
          unitIds,
          product.holdSeconds,
        ],
      );
      await appendMovements(tx, [
        {
          sku: req.sku,
          purchaseId: req.purchaseId,
          kind: 'hold',
          available: -req.quantity,
          held: req.quantity,
          oversold: alloc.oversold,
        },
      ]);
      return { outcome: 'held' as const, hold: toHold(rows[0]), existing: false };
    });
  } catch (err) {
    if (err instanceof Refusal) {
      // The buyer's active hold is this very purchase, taken by a concurrent call: that is the answer.
      if (err.result.outcome === 'hold_exists' && err.result.heldBy === req.purchaseId) {
        const hold = await findHold(db, req.purchaseId);
        if (hold) return { outcome: 'held', hold, existing: true };
      }
      return err.result;
    }
    if (pgCode(err) === PG.uniqueViolation) {
      // A concurrent call won the race: for the same purchase, answer with its hold; for the
      // same buyer, that is the one-active-hold rule.
      const hold = await findHold(db, req.purchaseId);
      if (hold) return { outcome: 'held', hold, existing: true };
      if (constraintOf(err) === 'holds_one_active_per_buyer') {
        const c = (
          await db.query<{ purchase_id: string }>(
            `SELECT purchase_id FROM holds WHERE sku = $1 AND buyer_id = $2 AND status = 'active'`,
            [req.sku, req.buyerId],
          )
        ).rows[0];
        return { outcome: 'hold_exists', heldBy: c?.purchase_id ?? 'unknown' };
      }
    }
    throw err;
  }
}

// ---------------------------------------------------------------------------------------------
// Batched holds (the hold desk's transaction)

/**
 * Serves many requests for one SKU in one transaction and one round trip (`take_holds_batch` in
 * db/migrations/003): one conditional UPDATE for the batch, one multi-row INSERT. Answers follow
 * arrival order exactly; a throw fails this batch only.
 */
export async function takeHoldsBatch(db: Db, sku: string, reqs: HoldRequest[], start = 0): Promise<HoldResult[]> {
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
          existing: false,
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
    if (hold) {
      results[i] = { outcome: 'held', hold, existing: true };
    } else {
      const { rows: active } = await db.query<{ purchase_id: string }>(
        `SELECT purchase_id FROM holds WHERE sku = $1 AND buyer_id = $2 AND status = 'active'`,
        [sku, reqs[i].buyerId],
      );
      results[i] = active[0] ? { outcome: 'hold_exists', heldBy: active[0].purchase_id } : { outcome: 'sold_out' };
    }
  }
  return results as HoldResult[];
}

// ---------------------------------------------------------------------------------------------
// Transitions after the hold

export type ReleaseResult = { released: boolean; status: HoldStatus | 'not_found' };

/**
 * Returns a hold's units to stock: `active` → `released` (or `expired`), at most once. Calling it
 * again, or after the hold lapsed and was reclaimed, or after it was sold, changes nothing.
 */
export async function releaseHold(
  db: Db,
  purchaseId: string,
  reason: 'release' | 'expire' = 'release',
): Promise<ReleaseResult> {
  return withTx(db, async (tx) => {
    const { rows } = await tx.query<HoldRow>(
      `UPDATE holds SET status = $2, updated_at = now() WHERE purchase_id = $1 AND status = 'active' RETURNING *`,
      [purchaseId, reason === 'release' ? 'released' : 'expired'],
    );
    if (rows[0]) {
      await returnToStock(tx, rows, reason);
      return { released: true, status: rows[0].status };
    }
    const hold = await findHold(tx, purchaseId);
    return { released: false, status: hold?.status ?? 'not_found' };
  });
}

/**
 * Keeps an active hold for at least `seconds` more (a delayed payment is settling). Returns the new
 * expiry, or null when the hold is no longer active (it lapsed and went back to stock first).
 */
export async function extendHold(db: Db, purchaseId: string, seconds: number): Promise<string | null> {
  const { rows } = await db.query<{ expires_at: Date }>(
    `UPDATE holds SET expires_at = greatest(expires_at, now() + make_interval(secs => $2)), updated_at = now()
      WHERE purchase_id = $1 AND status = 'active' AND expires_at > now() RETURNING expires_at`,
    [purchaseId, seconds],
  );
  return rows[0]?.expires_at.toISOString() ?? null;
}

export type ConvertResult =
  | { outcome: 'sold'; hold: Hold; converted: boolean }
  | { outcome: 'lapsed'; status: HoldStatus }
  | { outcome: 'not_found' };

/**
 * Turns an active hold into a sale (`active` → `sold`), once. A hold already returned to stock
 * answers `lapsed`: the caller must re-take a unit (retakeForLatePayment) instead.
 */
export async function convertHold(db: Db, purchaseId: string): Promise<ConvertResult> {
  return withTx(db, async (tx) => {
    const { rows } = await tx.query<HoldRow>(
      `UPDATE holds SET status = 'sold', updated_at = now() WHERE purchase_id = $1 AND status = 'active' RETURNING *`,
      [purchaseId],
    );
    const row = rows[0];
    if (row) {
      if (row.unit_ids) await tx.query(`UPDATE units SET status = 'sold' WHERE purchase_id = $1`, [purchaseId]);
      await appendMovements(tx, [{ sku: row.sku, purchaseId, kind: 'sell', held: -row.quantity, sold: row.quantity }]);
      return { outcome: 'sold', hold: toHold(row), converted: true };
    }
    const hold = await findHold(tx, purchaseId);
    if (!hold) return { outcome: 'not_found' };
    if (hold.status === 'sold' || hold.status === 'restocked') return { outcome: 'sold', hold, converted: false };
    return { outcome: 'lapsed', status: hold.status };
  });
}

export type RetakeResult =
  { outcome: 'sold'; hold: Hold; retaken: boolean } | { outcome: 'sold_out' } | { outcome: 'not_found' };

/**
 * For a payment that arrived after its hold went back to stock: takes the units again with the
 * same conditional update and records the sale (`released|expired` → `sold`), once. Per-buyer
 * limits are not applied again: the buyer was within them when the hold was taken.
 */
export async function retakeForLatePayment(db: Db, purchaseId: string): Promise<RetakeResult> {
  try {
    return await withTx(db, async (tx) => {
      const locked = (await tx.query<HoldRow>('SELECT * FROM holds WHERE purchase_id = $1 FOR UPDATE', [purchaseId]))
        .rows[0];
      if (!locked) return { outcome: 'not_found' as const };
      if (locked.status === 'sold' || locked.status === 'restocked') {
        return { outcome: 'sold' as const, hold: toHold(locked), retaken: false };
      }
      if (locked.status === 'active') {
        // Never released: the hold itself becomes the sale.
        await tx.query(`UPDATE holds SET status = 'sold', updated_at = now() WHERE purchase_id = $1`, [purchaseId]);
        if (locked.unit_ids) await tx.query(`UPDATE units SET status = 'sold' WHERE purchase_id = $1`, [purchaseId]);
        await appendMovements(tx, [
          { sku: locked.sku, purchaseId, kind: 'sell', held: -locked.quantity, sold: locked.quantity },
        ]);
        return { outcome: 'sold' as const, hold: { ...toHold(locked), status: 'sold' as const }, retaken: false };
      }
      await reclaimExpired(tx, locked.sku);
      const product = (await getProduct(tx, locked.sku))!;
      let unitIds: string[] | null = null;
      if (product.hasUnits) {
        // The same seats if still free, else any.
        unitIds = [];
        for (const u of locked.unit_ids ?? []) unitIds.push(...(await pickUnits(tx, locked.sku, purchaseId, 1, u)));
        if (unitIds.length < locked.quantity) {
          unitIds.push(...(await pickUnits(tx, locked.sku, purchaseId, locked.quantity - unitIds.length)));
        }
        if (unitIds.length < locked.quantity) throw new Refusal({ outcome: 'sold_out' });
        await tx.query(`UPDATE units SET status = 'sold' WHERE purchase_id = $1`, [purchaseId]);
      }
      const alloc = await takeStock(tx, product, purchaseId, locked.quantity);
      const { rows } = await tx.query<HoldRow>(
        `UPDATE holds SET status = 'sold', bucket = $2, oversold = $3, unit_ids = coalesce($4, unit_ids), updated_at = now()
          WHERE purchase_id = $1 RETURNING *`,
        [purchaseId, alloc.bucket, alloc.oversold, unitIds],
      );
      await appendMovements(tx, [
        {
          sku: locked.sku,
          purchaseId,
          kind: 'retake',
          available: -locked.quantity,
          sold: locked.quantity,
          oversold: alloc.oversold,
        },
      ]);
      return { outcome: 'sold' as const, hold: toHold(rows[0]), retaken: true };
    });
  } catch (err) {
    if (err instanceof Refusal && err.result.outcome === 'sold_out') return { outcome: 'sold_out' };
    throw err;
  }
}

export type RestockResult = { restocked: boolean; status: HoldStatus | 'not_found' };

/** Puts a refunded sale's units back on sale (`sold` → `restocked`), at most once. */
export async function restockSale(db: Db, purchaseId: string): Promise<RestockResult> {
  return withTx(db, async (tx) => {
    const { rows } = await tx.query<HoldRow>(
      `UPDATE holds SET status = 'restocked', updated_at = now() WHERE purchase_id = $1 AND status = 'sold' RETURNING *`,
      [purchaseId],
    );
    if (rows[0]) {
      await returnToStock(tx, rows, 'refund_restock');
      return { restocked: true, status: 'restocked' };
    }
    const hold = await findHold(tx, purchaseId);
    return { restocked: false, status: hold?.status ?? 'not_found' };
  });
}
