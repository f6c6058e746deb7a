import type { Db } from './db';

// The pace new Checkout Sessions are let in at: the Stripe budget (STRIPE_MAX_REQUESTS_PER_SECOND),
// shared by every API process through one row (`checkout_pace`, migration 016). Each new purchase
// takes the next slot, one budget interval after the last; a purchase whose slot is later than now
// starts its saga at that slot, so a crowd's holds are taken at the pace their sessions can open
// (and a hold is not spent waiting for Stripe). The Stripe task queue's rate limit is the budget's
// hard edge; this only keeps the line in front of it short.

/**
 * The slot of a new purchase's checkout (when its saga should start), kept on the purchase
 * (`checkout_at`: its place in the line). One statement, for winners only; a purchase that already
 * has a slot keeps it (a retry takes no second one).
 */
export async function takeCheckoutSlot(db: Db, purchaseId: string, perSecond: number): Promise<Date> {
  const { rows } = await db.query<{ slot: Date }>(
    `WITH mine AS (SELECT checkout_at FROM purchases WHERE purchase_id = $1),
          taken AS (
            UPDATE checkout_pace SET next_at = greatest(next_at, now()) + make_interval(secs => 1.0 / $2::float8)
             WHERE pace_id = 1 AND NOT EXISTS (SELECT 1 FROM mine WHERE checkout_at IS NOT NULL)
            RETURNING next_at - make_interval(secs => 1.0 / $2::float8) AS slot),
          kept AS (
            UPDATE purchases SET checkout_at = taken.slot FROM taken
             WHERE purchase_id = $1 AND checkout_at IS NULL RETURNING checkout_at)
     SELECT coalesce((SELECT checkout_at FROM kept), (SELECT checkout_at FROM mine), (SELECT slot FROM taken), now())
            AS slot`,
    [purchaseId, perSecond],
  );
  return rows[0].slot;
}
