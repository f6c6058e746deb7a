import { PG, constraintOf, pgCode, withTx, type Db, type Queryable, type Tx } from './db';
import type { PurchaseInput } from '../vocabulary';
import { activeHoldSql, toHold, type Hold, type HoldResult, type HoldRow, type HoldStatus } from './hold-types';
import { forgetClaims } from './claims';
import { appendMovements } from './ledger';
import { lockBuyerOnSku } from './open-purchase';
import { getProduct } from './products';
import { buyerCommitments, checkBuyer, pickUnits, reclaimExpired, Refusal, returnToStock, takeStock } from './stock';

/**
 * Holds, from take to sale or return. Every decrement is a conditional UPDATE guarded by
 * `available - qty >= floor` (with a CHECK constraint behind it), every increment is one guarded
 * state transition of one hold, and every movement is appended to `stock_movements` in the same
 * transaction. The hold desk (hold-desk.ts) serves the same takes in batches.
 */

export async function sweepExpired(db: Db): Promise<number> {
  const { rows } = await db.query<{ sku: string }>(
    `SELECT DISTINCT h.sku FROM holds h JOIN products p ON p.sku = h.sku
      WHERE h.status = 'active' AND h.expires_at <= now() - make_interval(secs => p.hold_grace_seconds)`,
  );
  let expired = 0;
  for (const { sku } of rows) expired += await withTx(db, (tx) => reclaimExpired(tx, sku));
  return expired;
}

/** The purchase that holds `sku` for this buyer now, if any (one at most: a unique index). */
export async function activeHoldOf(db: Queryable, sku: string, buyerId: string): Promise<string | null> {
  const { rows } = await db.query<{ purchase_id: string | null }>(
    `SELECT ${activeHoldSql('$1', '$2')} AS purchase_id`,
    [sku, buyerId],
  );
  return rows[0]?.purchase_id ?? null;
}

export async function findHold(db: Db | Tx, purchaseId: string): Promise<Hold | null> {
  const { rows } = await db.query<HoldRow>('SELECT * FROM holds WHERE purchase_id = $1', [purchaseId]);
  return rows[0] ? toHold(rows[0]) : null;
}

export async function takeHold(db: Db, req: PurchaseInput): Promise<HoldResult> {
  const existing = await findHold(db, req.purchaseId);
  if (existing) return { outcome: 'held', hold: existing };
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
      return { outcome: 'held' as const, hold: toHold(rows[0]) };
    });
  } catch (err) {
    if (err instanceof Refusal) {
      // The buyer's active hold is this very purchase, taken by a concurrent call: that is the answer.
      if (err.result.outcome === 'hold_exists' && err.result.heldBy === req.purchaseId) {
        const hold = await findHold(db, req.purchaseId);
        if (hold) return { outcome: 'held', hold };
      }
      return err.result;
    }
    if (pgCode(err) === PG.uniqueViolation) {
      // A concurrent call won the race: for the same purchase, answer with its hold; for the
      // same buyer, that is the one-active-hold rule.
      const hold = await findHold(db, req.purchaseId);
      if (hold) return { outcome: 'held', hold };
      if (constraintOf(err) === 'holds_one_active_per_buyer') {
        return { outcome: 'hold_exists', heldBy: (await activeHoldOf(db, req.sku, req.buyerId)) ?? 'unknown' };
      }
    }
    throw err;
  }
}

export type ReleaseResult = { released: boolean; status: HoldStatus | 'not_found' };

/**
 * Returns a hold's units to stock: `active` → `released` (or `expired`), at most once. Calling it
 * again, or after the hold lapsed and was reclaimed, or after it was sold, changes nothing.
 * `andThen` writes within the same transaction, every time (the purchase's ending, once per step).
 */
export async function releaseHold(
  db: Db,
  purchaseId: string,
  reason: 'release' | 'expire' = 'release',
  andThen?: (tx: Tx) => Promise<void>,
): Promise<ReleaseResult> {
  return withTx(db, async (tx) => {
    const { rows } = await tx.query<HoldRow>(
      `UPDATE holds SET status = $2, updated_at = now() WHERE purchase_id = $1 AND status = 'active' RETURNING *`,
      [purchaseId, reason === 'release' ? 'released' : 'expired'],
    );
    if (rows[0]) await returnToStock(tx, rows, reason);
    // The purchase's record in the same transaction, whether this call or an earlier one released it.
    await andThen?.(tx);
    if (rows[0]) return { released: true, status: rows[0].status };
    const hold = await findHold(tx, purchaseId);
    return { released: false, status: hold?.status ?? 'not_found' };
  });
}

/**
 * Keeps an active hold `seconds` longer (never shorter), provided it was still running at
 * `runningAt` (default: it is still its buyer's, lapsed at most its product's grace ago): for a
 * delayed payment that is settling, or for a payment Stripe took while the hold ran but whose saga is
 * behind (a worker restarting, a slow webhook), so the saga turns it into the sale instead of finding
 * it reclaimed by the next buyer. Null when the hold ended, or lapsed before `runningAt` (a late
 * payment, settled by a re-take).
 */
export async function extendHold(
  db: Db | Tx,
  purchaseId: string,
  seconds: number,
  runningAt?: Date,
): Promise<string | null> {
  const { rows } = await db.query<{ expires_at: Date }>(
    `UPDATE holds h SET expires_at = greatest(h.expires_at, now() + make_interval(secs => $2)), updated_at = now()
       FROM products p
      WHERE h.purchase_id = $1 AND p.sku = h.sku AND h.status = 'active'
        AND h.expires_at > coalesce($3, now() - make_interval(secs => p.hold_grace_seconds))
      RETURNING h.expires_at`,
    [purchaseId, seconds, runningAt ?? null],
  );
  return rows[0]?.expires_at.toISOString() ?? null;
}

/**
 * A delayed payment was completed in time: the purchase is marked settling (its buyer is done with
 * the checkout and leaves the waiting room, which counts its units only while its hold lasts) and
 * its hold kept `seconds` longer, in one transaction. The hold's new end, or null when it had
 * already ended (as extendHold).
 */
export async function holdWhileSettling(db: Db, purchaseId: string, seconds: number): Promise<string | null> {
  return withTx(db, async (tx) => {
    await tx.query('UPDATE purchases SET settling_at = coalesce(settling_at, now()) WHERE purchase_id = $1', [
      purchaseId,
    ]);
    return extendHold(tx, purchaseId, seconds);
  });
}

/**
 * What `maxPerBuyer` counts of a buyer besides `purchaseId`: their sales of the SKU and their hold of
 * it while it lasts (a hold lapsed past its grace is another buyer's to take, swept or not).
 */
async function committedBesides(tx: Tx, sku: string, buyerId: string, purchaseId: string): Promise<number> {
  const { rows } = await tx.query<{ n: number }>(
    `SELECT coalesce(sum(h.quantity), 0)::int AS n FROM holds h JOIN products p ON p.sku = h.sku
      WHERE h.sku = $1 AND h.buyer_id = $2 AND h.purchase_id <> $3
        AND (h.status = 'sold'
             OR (h.status = 'active' AND h.expires_at > now() - make_interval(secs => p.hold_grace_seconds)))`,
    [sku, buyerId, purchaseId],
  );
  return rows[0].n;
}

/**
 * A payment refused for the buyer's limit, in the refusing transaction: a hold still active goes back
 * to stock, and the card's and address's claims of the purchase go (a refunded payment counts
 * against no limit). The caller refunds the payment.
 */
async function refuseForBuyerLimit(tx: Tx, purchaseId: string): Promise<void> {
  const { rows } = await tx.query<HoldRow>(
    `UPDATE holds SET status = 'released', updated_at = now() WHERE purchase_id = $1 AND status = 'active' RETURNING *`,
    [purchaseId],
  );
  if (rows[0]) await returnToStock(tx, rows, 'release');
  await forgetClaims(tx, purchaseId);
}

export type ConvertResult =
  | { outcome: 'sold'; hold: Hold }
  | { outcome: 'lapsed'; status: HoldStatus }
  | { outcome: 'limit_exceeded'; hold: Hold }
  | { outcome: 'not_found' };

/**
 * Turns an active hold into a sale (`active` → `sold`), once. A hold already returned to stock
 * answers `lapsed`: the caller must re-take a unit (retakeForLatePayment) instead. The buyer's other
 * sales of the SKU count against `maxPerBuyer` in the same statement: a re-take of a late payment
 * that ran while this hold was being taken (each missed the other) leaves this one `limit_exceeded`:
 * its hold goes back to stock in the same transaction, and the caller refunds the payment.
 */
/** `recordSale` runs in the same transaction when this call sells the hold (not when it was sold before). */
export async function convertHold(
  db: Db,
  purchaseId: string,
  recordSale?: (tx: Tx) => Promise<void>,
): Promise<ConvertResult> {
  return withTx(db, async (tx) => {
    const { rows } = await tx.query<HoldRow>(
      `UPDATE holds h SET status = 'sold', updated_at = now() FROM products p
        WHERE h.purchase_id = $1 AND h.status = 'active' AND p.sku = h.sku
          AND h.quantity + (SELECT coalesce(sum(o.quantity), 0) FROM holds o
                             WHERE o.sku = h.sku AND o.buyer_id = h.buyer_id AND o.status = 'sold'
                               AND o.purchase_id <> h.purchase_id) <= p.max_per_buyer
        RETURNING h.*`,
      [purchaseId],
    );
    const row = rows[0];
    if (row) {
      if (row.unit_ids) await tx.query(`UPDATE units SET status = 'sold' WHERE purchase_id = $1`, [purchaseId]);
      await appendMovements(tx, [{ sku: row.sku, purchaseId, kind: 'sell', held: -row.quantity, sold: row.quantity }]);
      await recordSale?.(tx);
      return { outcome: 'sold', hold: toHold(row) };
    }
    const hold = await findHold(tx, purchaseId);
    if (!hold) return { outcome: 'not_found' };
    if (hold.status === 'sold' || hold.status === 'restocked') return { outcome: 'sold', hold };
    if (hold.status === 'active') {
      await refuseForBuyerLimit(tx, purchaseId);
      return { outcome: 'limit_exceeded', hold: { ...hold, status: 'released' } };
    }
    return { outcome: 'lapsed', status: hold.status };
  });
}

export type RetakeResult =
  | { outcome: 'sold'; hold: Hold }
  | { outcome: 'sold_out' }
  | { outcome: 'limit_exceeded'; limit: number; alreadyCommitted: number }
  | { outcome: 'not_found' };

/**
 * For a payment that arrived after its hold went back to stock: takes the units again with the
 * same conditional update and records the sale (`released|expired` → `sold`), once. The per-buyer
 * limit is applied again: once the hold went back, the buyer could hold or buy other units meanwhile,
 * and those count (`limit_exceeded`: nothing taken, a hold still active goes back).
 */
export async function retakeForLatePayment(db: Db, purchaseId: string): Promise<RetakeResult> {
  try {
    return await withTx(db, async (tx) => {
      const whose = (
        await tx.query<{ sku: string; buyer_id: string }>('SELECT sku, buyer_id FROM holds WHERE purchase_id = $1', [
          purchaseId,
        ])
      ).rows[0];
      if (!whose) return { outcome: 'not_found' as const };
      // One re-take per buyer and SKU at a time (two late payments of one buyer at once each count the
      // other): the buyer's lock first, then the hold's row.
      await lockBuyerOnSku(tx, whose.sku, whose.buyer_id);
      const locked = (await tx.query<HoldRow>('SELECT * FROM holds WHERE purchase_id = $1 FOR UPDATE', [purchaseId]))
        .rows[0];
      if (locked.status === 'sold' || locked.status === 'restocked') {
        return { outcome: 'sold' as const, hold: toHold(locked) };
      }
      const product = (await getProduct(tx, locked.sku))!;
      const committed = await committedBesides(tx, locked.sku, locked.buyer_id, purchaseId);
      if (committed + locked.quantity > product.maxPerBuyer) {
        await refuseForBuyerLimit(tx, purchaseId);
        return { outcome: 'limit_exceeded' as const, limit: product.maxPerBuyer, alreadyCommitted: committed };
      }
      if (locked.status === 'active') {
        // Never released: the hold itself becomes the sale.
        await tx.query(`UPDATE holds SET status = 'sold', updated_at = now() WHERE purchase_id = $1`, [purchaseId]);
        if (locked.unit_ids) await tx.query(`UPDATE units SET status = 'sold' WHERE purchase_id = $1`, [purchaseId]);
        await appendMovements(tx, [
          { sku: locked.sku, purchaseId, kind: 'sell', held: -locked.quantity, sold: locked.quantity },
        ]);
        return { outcome: 'sold' as const, hold: { ...toHold(locked), status: 'sold' as const } };
      }
      await reclaimExpired(tx, locked.sku);
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
      return { outcome: 'sold' as const, hold: toHold(rows[0]) };
    });
  } catch (err) {
    if (err instanceof Refusal && err.result.outcome === 'sold_out') {
      await withTx(db, (tx) => forgetClaims(tx, purchaseId));
      return { outcome: 'sold_out' };
    }
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
