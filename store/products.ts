import { PG, constraintOf, pgCode, withTx, type Db, type Queryable, type Tx } from './db';
import { lockBuckets } from './buckets';
import { backAtSql } from './hold-types';
import { appendMovements } from './ledger';
import type { ProductTerms } from '../vocabulary';
import { DEFAULT_HOLD_GRACE_SECONDS, DEFAULT_HOLD_SECONDS, STRIPE_MAX_CHARGE_CENTS } from '../vocabulary/limits';
import { createRoom, type RoomSettings } from './room';

// The catalogue: products, their bucket rows and seats, restocks, and availability as a buyer sees it.

export interface Product {
  sku: string;
  name: string;
  priceCents: number;
  currency: string;
  total: number;
  buckets: number;
  holdSeconds: number;
  /**
   * How long past a hold's lapse its unit stays out of other buyers' reach unless its saga gives it
   * back first: a payment made in time and reported late still sells the hold itself.
   */
  holdGraceSeconds: number;
  maxPerBuyer: number;
  /** Units one payment card may buy (card fingerprint); null: no limit. */
  maxPerCard: number | null;
  /** Units one shipping address may buy (its normalised key, store/addresses.ts); null: no limit. */
  maxPerAddress: number | null;
  /** Where Checkout lets the buyer ship (ISO country codes); null: no address is collected. */
  shippingCountries: string[] | null;
  /** A join (with a room) or a purchase (without) needs a solved proof-of-work challenge. */
  botCheck: boolean;
  oversellAllowance: number;
  hasUnits: boolean;
  /** The room's settings as created (their live values are the room's: store/room.ts). */
  waitingRoom: RoomSettings | null;
  /** No purchase before it (and, with a room, no admission): null, on sale from its creation. */
  opensAt: Date | null;
  /** The terms of the rules in store/rules/ that have their own (`{}`: none), by the term's name. */
  ruleTerms: Record<string, unknown>;
}

export interface NewProduct {
  sku: string;
  name: string;
  priceCents: number;
  currency: string;
  stock: number;
  buckets?: number;
  holdSeconds?: number;
  holdGraceSeconds?: number;
  maxPerBuyer?: number;
  maxPerCard?: number | null;
  maxPerAddress?: number | null;
  shippingCountries?: string[] | null;
  botCheck?: boolean | null;
  oversellAllowance?: number;
  waitingRoom?: RoomSettings | null;
  /** No purchase before it; with a waiting room, buyers who join before it wait in the pre-queue. */
  opensAt?: string | null;
  units?: string[];
  /** The terms of rules with their own (store/rules/), checked by the API against each rule's schema. */
  ruleTerms?: Record<string, unknown>;
}

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

interface ProductRow {
  sku: string;
  name: string;
  price_cents: number;
  currency: string;
  total: number;
  buckets: number;
  hold_seconds: number;
  hold_grace_seconds: number;
  max_per_buyer: number;
  max_per_card: number | null;
  max_per_address: number | null;
  shipping_countries: string[] | null;
  bot_check: boolean;
  oversell_allowance: number;
  has_units: boolean;
  waiting_room: Product['waitingRoom'];
  opens_at: Date | null;
  rule_terms: Record<string, unknown> | null;
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
    holdGraceSeconds: r.hold_grace_seconds,
    maxPerBuyer: r.max_per_buyer,
    maxPerCard: r.max_per_card,
    maxPerAddress: r.max_per_address,
    shippingCountries: r.shipping_countries,
    botCheck: r.bot_check,
    oversellAllowance: r.oversell_allowance,
    hasUnits: r.has_units,
    waitingRoom: r.waiting_room,
    opensAt: r.opens_at,
    ruleTerms: r.rule_terms ?? {},
  };
}

/** What a purchase of this product sells at: fixed at creation, so a saga carries it instead of reading it again. */
export function termsOf(p: Product): ProductTerms {
  return {
    name: p.name,
    priceCents: p.priceCents,
    currency: p.currency,
    holdSeconds: p.holdSeconds,
    hasUnits: p.hasUnits,
    ...(p.maxPerCard ? { maxPerCard: p.maxPerCard } : {}),
    ...(p.maxPerAddress ? { maxPerAddress: p.maxPerAddress } : {}),
    ...(p.shippingCountries?.length ? { shippingCountries: p.shippingCountries } : {}),
    ...(Object.keys(p.ruleTerms).length ? { rules: p.ruleTerms } : {}),
  };
}

export class ProductExistsError extends Error {
  readonly type = 'product-exists';
}

/**
 * The largest `total` a product may reach (its stock plus every restock). The column is a 32-bit
 * integer, and the sums read from it (total + oversell allowance, held + sold, the ledger's totals)
 * must fit too: a billion leaves more than twice that room.
 */
export const MAX_TOTAL = 1_000_000_000;

/** The largest order one purchase of a product can be: a purchase takes at most `maxPerBuyer` units. */
export function largestOrderCents(p: Pick<NewProduct, 'priceCents' | 'maxPerBuyer'>): number {
  return p.priceCents * (p.maxPerBuyer ?? 1);
}

/** A product whose largest order Stripe could not charge: refused before anything is written. */
export class OrderTooLargeError extends Error {
  readonly type = 'order-too-large';
}

/**
 * Creates a product, its bucket rows (stock spread evenly) and, for seats, one row per unit. Throws
 * OrderTooLargeError, writing nothing, when its largest order exceeds what Stripe can charge: a saga
 * would otherwise take the hold and then fail to open the session for good.
 */
export async function createProduct(db: Db, input: NewProduct): Promise<Product> {
  const largest = largestOrderCents(input);
  if (largest > STRIPE_MAX_CHARGE_CENTS) {
    throw new OrderTooLargeError(
      `${input.priceCents} × maxPerBuyer ${input.maxPerBuyer ?? 1} = ${largest} exceeds ${STRIPE_MAX_CHARGE_CENTS}, ` +
        'the largest amount Stripe can charge; lower the price or maxPerBuyer',
    );
  }
  const units = input.units ?? null;
  const stock = units ? units.length : input.stock;
  // Seats are picked row by row, so splitting their count buys nothing; allowance makes no sense either.
  const buckets = units ? 1 : Math.max(1, input.buckets ?? 1);
  const allowance = units ? 0 : (input.oversellAllowance ?? 0);
  try {
    return await withTx(db, async (tx) => {
      const { rows } = await tx.query<ProductRow>(
        `INSERT INTO products (sku, name, price_cents, currency, total, buckets, hold_seconds, max_per_buyer,
                               oversell_allowance, has_units, waiting_room, max_per_card, opens_at, hold_grace_seconds,
                               max_per_address, shipping_countries, bot_check, rule_terms)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18) RETURNING *`,
        [
          input.sku,
          input.name,
          input.priceCents,
          input.currency.toLowerCase(),
          stock,
          buckets,
          input.holdSeconds ?? DEFAULT_HOLD_SECONDS,
          input.maxPerBuyer ?? 1,
          allowance,
          units !== null,
          input.waitingRoom ? JSON.stringify(input.waitingRoom) : null,
          input.maxPerCard ?? null,
          input.opensAt ?? null,
          input.holdGraceSeconds ?? DEFAULT_HOLD_GRACE_SECONDS,
          input.maxPerAddress ?? null,
          input.shippingCountries?.length ? input.shippingCountries.map((c) => c.toUpperCase()) : null,
          input.botCheck ?? false,
          JSON.stringify(input.ruleTerms ?? {}),
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
      if (input.waitingRoom) {
        await createRoom(tx, input.sku, input.waitingRoom, input.opensAt ? new Date(input.opensAt) : null);
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

/** A restock that would take a product's total past MAX_TOTAL: refused, nothing written. */
export class TotalTooLargeError extends Error {
  readonly type = 'total-too-large';
}

/**
 * Adds `quantity` units of a counted product to total, spread over its buckets. Null when the SKU is
 * unknown or is a product of units. Throws TotalTooLargeError, writing nothing, when the new total
 * would pass MAX_TOTAL: the bound is part of the one conditional UPDATE (computed in 64 bits), so
 * concurrent restocks cannot pass it between a read and a write.
 */
export async function restockProduct(db: Db, sku: string, quantity: number): Promise<Product | null> {
  return withTx(db, async (tx) => {
    const { rows } = await tx.query<ProductRow>(
      `UPDATE products SET total = total + $2
        WHERE sku = $1 AND NOT has_units AND total::bigint + $2::bigint <= $3::bigint RETURNING *`,
      [sku, quantity, MAX_TOTAL],
    );
    if (!rows[0]) {
      const now = await getProduct(tx, sku);
      if (now && !now.hasUnits) {
        throw new TotalTooLargeError(
          `${now.total} + ${quantity} would pass ${MAX_TOTAL}, the largest total a product may have; ` +
            `at most ${MAX_TOTAL - now.total} more can be added`,
        );
      }
      return null;
    }
    // The buckets in bucket order first, the one lock order every taker uses: an UPDATE over them
    // all locks them in the order its scan meets them, and a take waiting on one the restock
    // holds while holding one it wants is a deadlock (a batch of buyers or the restock aborted).
    await lockBuckets(tx, [sku], [null]);
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
 * Stock as a buyer should see it. A hold past its `expires_at` and its grace counts as available
 * even when no sweeper or taker has returned it yet; within its grace it still counts as held.
 */
export async function getAvailability(db: Db | Tx, sku: string): Promise<Availability | null> {
  return (await availabilityOf(db, [sku])).get(sku) ?? null;
}

/** The availability of each of `skus` that is a product, in one statement (the catalogue page's many). */
export async function availabilityOf(db: Db | Tx, skus: string[]): Promise<Map<string, Availability>> {
  const { rows } = await db.query<{
    sku: string;
    total: number;
    oversell_allowance: number;
    counted: number;
    held: number;
    lapsed: number;
    sold: number;
    oversold: number;
  }>(
    `SELECT p.sku, p.total, p.oversell_allowance,
            (SELECT coalesce(sum(available), 0)::int FROM stock_buckets WHERE sku = p.sku) AS counted,
            coalesce(sum(h.quantity) FILTER (WHERE h.status = 'active' AND h.expires_at > c.cutoff), 0)::int AS held,
            coalesce(sum(h.quantity) FILTER (WHERE h.status = 'active' AND h.expires_at <= c.cutoff), 0)::int AS lapsed,
            coalesce(sum(h.quantity) FILTER (WHERE h.status = 'sold'), 0)::int AS sold,
            coalesce(sum(h.oversold) FILTER (WHERE h.status = 'sold' OR (h.status = 'active' AND h.expires_at > c.cutoff)), 0)::int AS oversold
       FROM products p
      CROSS JOIN LATERAL (SELECT now() - make_interval(secs => p.hold_grace_seconds) AS cutoff) c
       LEFT JOIN holds h ON h.sku = p.sku AND h.status IN ('active', 'sold')
      WHERE p.sku = ANY($1::text[])
      GROUP BY p.sku, p.total, p.oversell_allowance`,
    [skus],
  );
  const bySku = new Map<string, Availability>();
  for (const r of rows) {
    const available = Math.max(0, r.counted + r.lapsed);
    const allowanceLeft = r.oversell_allowance - r.oversold;
    const soldOut = available + Math.max(0, allowanceLeft) <= 0;
    bySku.set(r.sku, {
      sku: r.sku,
      total: r.total,
      available,
      held: r.held,
      sold: r.sold,
      oversold: r.oversold,
      soldOut,
      exhausted: soldOut && r.held === 0,
    });
  }
  return bySku;
}

/** What the gate needs of a SKU: how many units can still be had, how many are held, and when the next hold lapses. */
export interface StockView {
  /** Units a take could get now: real stock, the unused oversell allowance, and lapsed holds past their grace not yet reclaimed. */
  remaining: number;
  /** Units in active holds that have not lapsed, or lapsed within their grace: they may come back. */
  held: number;
  /**
   * When the next of those may come back: a running hold's lapse (its saga gives an unpaid unit back
   * then), or for one already lapsed, the end of its grace (when a take reclaims it).
   */
  nextLapseAt: Date | null;
  /**
   * Of the purchase ids asked about, those whose hold step has answered: a hold row (its take is in
   * the figures above), or a record past `holding` without one (refused, or failed before the hold).
   */
  landed: string[];
}

/** The gate's view of one SKU, from the record (two index reads); null when there is no such product. */
export async function stockView(db: Queryable, sku: string, pending: string[] = []): Promise<StockView | null> {
  const { rows } = await db.query<{
    room: number | null;
    held: number;
    lapsed: number;
    next_lapse: Date | null;
    landed: string[] | null;
  }>(
    `SELECT (SELECT sum(available - floor)::int FROM stock_buckets WHERE sku = $1) AS room,
            (SELECT array_agg(p.purchase_id) FROM purchases p
              WHERE p.purchase_id = ANY($2::text[])
                AND (p.status <> 'holding' OR EXISTS (SELECT 1 FROM holds h WHERE h.purchase_id = p.purchase_id))) AS landed,
            coalesce(sum(quantity) FILTER (WHERE expires_at > c.cutoff), 0)::int AS held,
            coalesce(sum(quantity) FILTER (WHERE expires_at <= c.cutoff), 0)::int AS lapsed,
            min(${backAtSql('expires_at', 'c.grace')}) FILTER (WHERE expires_at > c.cutoff) AS next_lapse
       FROM (SELECT make_interval(secs => hold_grace_seconds) AS grace,
                    now() - make_interval(secs => hold_grace_seconds) AS cutoff
               FROM products WHERE sku = $1) c
       LEFT JOIN holds ON holds.sku = $1 AND holds.status = 'active'`,
    [sku, pending],
  );
  const r = rows[0];
  if (r.room === null) return null;
  return { remaining: Math.max(0, r.room + r.lapsed), held: r.held, nextLapseAt: r.next_lapse, landed: r.landed ?? [] };
}

/** The products of the catalogue, newest first (the buyer's page of what is on sale). */
export async function listProducts(db: Db, limit: number): Promise<Product[]> {
  const { rows } = await db.query<ProductRow>('SELECT * FROM products ORDER BY created_at DESC, sku LIMIT $1', [limit]);
  return rows.map(toProduct);
}
