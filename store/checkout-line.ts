import { Batcher } from './batcher';
import type { Db, Queryable } from './db';

// The line for Checkout Sessions. New sessions are let in at the session budget's pace
// (STRIPE_MAX_SESSIONS_PER_SECOND), shared by every API process through one row (`checkout_pace`,
// migration 016). Each new purchase takes the next slot, one budget interval after the last; a
// purchase whose slot is later than now starts its saga at that slot, so a crowd's holds are taken at
// the pace their sessions can open (and a hold is not spent waiting for Stripe). The Stripe task
// queue's rate limit (STRIPE_MAX_REQUESTS_PER_SECOND) is the hard edge; this only keeps the line in
// front of it short.
//
// A purchase in the line is already its buyer's hold on the SKU (it has no hold row yet): nobody
// holds two places for one SKU (store/open-purchase.ts), and only purchases that can still become
// checkouts count in the line's length and the room's backlog.

/** How long after its slot a purchase still `holding` counts as waiting; one older is stuck (`sagas stuck` lists it). */
const WAITING_FOR = "interval '1 minute'";

/**
 * SQL: the purchase `p` (an alias of `purchases`) is in the line for Checkout Sessions: still
 * `holding`, and, given `since` (an SQL time), its place in the line (its slot, or before it takes
 * one, its creation) later than that. The line's one definition: its length, a purchase's place in
 * it, a buyer's place on a SKU and `sagas stuck` all read it (the partial indexes of migrations 021
 * and 023 are on its `status = 'holding'`).
 */
export function inLine(p: string, since?: string): string {
  const holding = `${p}.status = 'holding'`;
  if (since === undefined) return `(${holding})`;
  return `(${holding} AND (${p}.checkout_at > ${since} OR (${p}.checkout_at IS NULL AND ${p}.created_at > ${since})))`;
}

/**
 * SQL: the purchase `p` waits in the line for its Checkout Session: in it, its place not over a
 * minute past. Its turn may not have come yet, or its saga is taking the hold and opening the session.
 */
export const waitingInLine = (p: string): string => inLine(p, `now() - ${WAITING_FOR}`);

/** Per pool and pace, the batcher of the slots its process takes (see takeCheckoutSlot). */
const slotDesks = new WeakMap<Db, Map<number, Batcher<string, Date>>>();

/**
 * The slot of a new purchase's checkout (when its saga should start), kept on the purchase
 * (`checkout_at`: its place in the line); a purchase that already has a slot keeps it (a retry takes
 * no second one). For winners only. The winners a process places at once take their slots in one
 * statement (takeCheckoutSlots): the line's one row is locked, and committed, once per batch rather
 * than once per winner, whose commits queued on that lock in a burst (136 ms p50 in
 * `bench:crowd --stripe-rate 10`).
 */
export function takeCheckoutSlot(db: Db, purchaseId: string, perSecond: number): Promise<Date> {
  let byPace = slotDesks.get(db);
  if (!byPace) slotDesks.set(db, (byPace = new Map<number, Batcher<string, Date>>()));
  let desk = byPace.get(perSecond);
  if (!desk) byPace.set(perSecond, (desk = new Batcher((ids) => takeCheckoutSlots(db, ids, perSecond))));
  return desk.call(purchaseId);
}

/**
 * The slots of these purchases, in their order, in one statement: those without one take the next
 * slots of the pace, one budget interval apart, in the order given. Their rows are locked first, in
 * the order of their ids (two batches naming one purchase never deadlock): retries of one key at once
 * wait for the first, then read the slot it kept. A purchase named twice gets one slot.
 */
export async function takeCheckoutSlots(db: Queryable, purchaseIds: string[], perSecond: number): Promise<Date[]> {
  const { rows } = await db.query<{ purchase_id: string; slot: Date }>(
    `WITH input AS (SELECT p, min(ord) AS ord FROM unnest($1::text[]) WITH ORDINALITY AS i(p, ord) GROUP BY p),
          mine AS (SELECT purchase_id, checkout_at FROM purchases WHERE purchase_id = ANY($1::text[])
                    ORDER BY purchase_id FOR UPDATE),
          fresh AS (SELECT m.purchase_id, row_number() OVER (ORDER BY i.ord) AS rn
                      FROM mine m JOIN input i ON i.p = m.purchase_id WHERE m.checkout_at IS NULL),
          n AS (SELECT count(*)::int AS n FROM fresh),
          taken AS (
            UPDATE checkout_pace SET next_at = greatest(next_at, now()) + make_interval(secs => n.n / $2::float8)
              FROM n WHERE pace_id = 1 AND n.n > 0
            RETURNING next_at - make_interval(secs => n.n / $2::float8) AS first),
          kept AS (
            UPDATE purchases pu SET checkout_at = t.first + make_interval(secs => (f.rn - 1) / $2::float8)
              FROM fresh f CROSS JOIN taken t
             WHERE pu.purchase_id = f.purchase_id AND pu.checkout_at IS NULL
            RETURNING pu.purchase_id, pu.checkout_at)
     SELECT i.p AS purchase_id, coalesce(k.checkout_at, m.checkout_at, now()) AS slot
       FROM input i LEFT JOIN kept k ON k.purchase_id = i.p LEFT JOIN mine m ON m.purchase_id = i.p`,
    [purchaseIds, perSecond],
  );
  const slots = new Map(rows.map((r) => [r.purchase_id, r.slot]));
  return purchaseIds.map((id) => slots.get(id)!);
}

/** Purchases of every product waiting in the line now: the room's backlog against the budget. */
export async function waitingCount(db: Queryable): Promise<number> {
  const { rows } = await db.query<{ waiting: number }>(
    `SELECT count(*)::int AS waiting FROM purchases p WHERE ${waitingInLine('p')}`,
  );
  return rows[0].waiting;
}

/** A purchase whose Checkout Session waits for its turn in the Stripe budget (its saga may not have started). */
export interface CheckoutQueuePlace {
  /** Purchases (of any SKU: the budget is the deployment's) whose turn comes before this one's and wait too. */
  ahead: number;
  /** Its slot in the budget's pace. */
  checkoutAt: string;
  /** Its hold's end, once the hold is taken. */
  holdExpiresAt?: string;
}

/** Which of these purchases are still `holding` with their slot in the line for Checkout Sessions after `since`. */
export async function inCheckoutLine(db: Db, purchaseIds: string[], since: Date): Promise<Set<string>> {
  if (purchaseIds.length === 0) return new Set();
  const { rows } = await db.query<{ purchase_id: string }>(
    `SELECT p.purchase_id FROM purchases p WHERE p.purchase_id = ANY($1::text[]) AND ${inLine('p')} AND p.checkout_at > $2`,
    [purchaseIds, since],
  );
  return new Set(rows.map((r) => r.purchase_id));
}

/** Where a `holding` purchase stands in the line for Checkout Sessions; null for any other, or one with no slot. */
export async function checkoutQueueOf(db: Db, purchaseId: string): Promise<CheckoutQueuePlace | null> {
  const { rows } = await db.query<{ ahead: number; checkout_at: Date; expires_at: Date | null }>(
    `SELECT p.checkout_at, h.expires_at,
            (SELECT count(*) FROM purchases q
              WHERE ${waitingInLine('q')} AND q.checkout_at < p.checkout_at)::int AS ahead
       FROM purchases p LEFT JOIN holds h ON h.purchase_id = p.purchase_id AND h.status = 'active'
      WHERE p.purchase_id = $1 AND ${inLine('p')} AND p.checkout_at IS NOT NULL`,
    [purchaseId],
  );
  const r = rows[0];
  if (!r) return null;
  return {
    ahead: r.ahead,
    checkoutAt: r.checkout_at.toISOString(),
    ...(r.expires_at ? { holdExpiresAt: r.expires_at.toISOString() } : {}),
  };
}

/** The line for Checkout Sessions as a whole, for the API's gauges (the same on every process: it is the record's). */
export interface LineStats {
  /** Purchases waiting in it (its length): `holding`, their place less than their product's hold past. */
  waiting: number;
  /** Seconds until the last slot handed out: about how long a purchase placed now waits for its session. */
  untilLastSlotSeconds: number;
  /** Seconds since the slot of the oldest purchase still waiting came (0 for none, or none overdue). */
  oldestSlotSeconds: number;
  /** The shortest hold of the products with purchases waiting (null for an empty line): the line must stay shorter. */
  shortestHoldSeconds: number | null;
}

/**
 * One read of the line: its length, its wait, how late the oldest is, and the shortest hold in it.
 * A purchase counts while its place is less than its product's hold past, not the minute of
 * `waitingInLine`: when sessions run late behind their slots (a loaded 800-buyer drill: the head of
 * the line 51 s late), the buyers a minute late still wait, and leaving them out hid 41 of them.
 */
export async function lineStats(db: Queryable): Promise<LineStats> {
  const { rows } = await db.query<{
    waiting: number;
    until_last: number;
    oldest: number;
    shortest_hold: number | null;
  }>(
    `SELECT count(*)::int AS waiting,
            coalesce(greatest(0, extract(epoch FROM now() - min(coalesce(p.checkout_at, p.created_at)))), 0)::float8 AS oldest,
            min(prod.hold_seconds)::int AS shortest_hold,
            (SELECT greatest(0, extract(epoch FROM next_at - now()))::float8 FROM checkout_pace WHERE pace_id = 1) AS until_last
       FROM purchases p JOIN products prod ON prod.sku = p.sku
      WHERE ${inLine('p', 'now() - make_interval(secs => prod.hold_seconds)')}`,
  );
  const r = rows[0];
  return {
    waiting: r.waiting,
    untilLastSlotSeconds: r.until_last ?? 0,
    oldestSlotSeconds: r.oldest,
    shortestHoldSeconds: r.shortest_hold,
  };
}
