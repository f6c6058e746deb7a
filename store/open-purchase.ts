import type { PurchaseRequest } from '../vocabulary';
import { waitingInLine } from './checkout-line';
import { withTx, type Db, type Queryable, type Tx } from './db';
import { activeHoldSql } from './hold-types';
import { getPurchase, purchaseIdFor, toRecord, type PurchaseRecord, type PurchaseRow } from './purchases';
import { unspentAdmissionSql } from './room';

// Recording a new purchase, and what admission reads before it. One buyer holds one place per SKU:
// an active hold, or a purchase still waiting in the line for its Checkout Session (it has no hold
// row until its turn comes). Both are decided under the buyer's lock, so requests of one buyer at
// once, on any number of API processes, record one purchase and refuse the rest.

/**
 * The buyer's lock on a SKU, for the rest of the transaction: every step that gives a buyer a place
 * on it (a new purchase, a late payment's re-take) runs one at a time per buyer and SKU.
 */
export async function lockBuyerOnSku(tx: Tx, sku: string, buyerId: string): Promise<void> {
  await tx.query('SELECT pg_advisory_xact_lock(hashtext($1), hashtext($2))', [sku, `buyer:${buyerId}`]);
}

/** SQL: the purchase, other than `self`, that holds `sku` for `buyer` now: its active hold, else its place in line. */
const heldBySql = (sku: string, buyer: string, self: string) =>
  `coalesce(
     ${activeHoldSql(sku, buyer, self)},
     (SELECT w.purchase_id FROM purchases w
       WHERE w.buyer_id = ${buyer} AND w.sku = ${sku} AND w.purchase_id <> ${self} AND ${waitingInLine('w')}
       ORDER BY w.created_at LIMIT 1))`;

export type OpenResult =
  /** Recorded now, in `holding`. */
  | { outcome: 'created'; record: PurchaseRecord }
  /** This Idempotency-Key had already made it. */
  | { outcome: 'known'; record: PurchaseRecord }
  /** The buyer already holds the SKU, or waits in line for it, with the purchase `heldBy`: nothing written. */
  | { outcome: 'held'; heldBy: string };

/** The admission this purchase needed (a product with a waiting room) is not valid, or was spent on another purchase. */
export class NotAdmittedError extends Error {
  readonly type = 'not-admitted';
}

/**
 * Records a new purchase in `holding`, or finds the one this Idempotency-Key already made, or finds
 * that the buyer already has a place on the SKU (then writes nothing). With `admission` (a product
 * with a waiting room), the same statement spends the ticket's admission on this purchase: a second
 * purchase with it records nothing and throws NotAdmittedError.
 */
export async function openPurchase(
  db: Db,
  idempotencyKey: string,
  req: PurchaseRequest,
  admission?: { ticketId: string },
): Promise<OpenResult> {
  const purchaseId = purchaseIdFor(idempotencyKey, req.buyerId);
  const request: PurchaseRequest = {
    sku: req.sku,
    buyerId: req.buyerId,
    quantity: req.quantity,
    ...(req.unitId ? { unitId: req.unitId } : {}),
  };
  const params = [
    purchaseId,
    idempotencyKey,
    JSON.stringify(request),
    req.sku,
    req.buyerId,
    req.quantity,
    req.unitId ?? null,
  ];
  const opened = await withTx(db, async (tx): Promise<OpenResult | null> => {
    await lockBuyerOnSku(tx, req.sku, req.buyerId);
    // Read after the lock, in a statement of its own: its snapshot sees every purchase committed by
    // whoever held the lock before.
    const { rows: held } = await tx.query<{ held_by: string | null; known: boolean }>(
      `SELECT ${heldBySql('$2', '$3', '$1')} AS held_by,
              EXISTS (SELECT 1 FROM purchases WHERE purchase_id = $1) AS known`,
      [purchaseId, req.sku, req.buyerId],
    );
    if (held[0].known) return null;
    if (held[0].held_by) return { outcome: 'held', heldBy: held[0].held_by };
    // No conflict target: the id is derived from (buyer, key), so its unique index and the one on
    // (buyer_id, idempotency_key) are the same fact, and both must be arbiters (a same key on another
    // SKU takes another lock).
    // The admission is spent only by the purchase this statement records: a same key recorded by
    // another request meanwhile (for another SKU: another lock) leaves this SKU's admission unspent.
    // The ticket is locked first, so a session the admitter is ending meanwhile is waited for and
    // read again: no purchase is recorded on an admission that is over.
    const { rows } = admission
      ? await tx.query<PurchaseRow>(
          `WITH ticket AS (SELECT ticket_id FROM room_tickets
                            WHERE ${unspentAdmissionSql('$8', '$4', '$5', '$1')} FOR UPDATE),
           opened AS (
             INSERT INTO purchases (purchase_id, idempotency_key, request, sku, buyer_id, quantity, unit_id, status)
             SELECT $1, $2, $3, $4, $5, $6, $7, 'holding' FROM ticket
             ON CONFLICT DO NOTHING RETURNING *),
           spent AS (UPDATE room_tickets SET purchase_id = $1
                      WHERE ticket_id IN (SELECT ticket_id FROM ticket) AND EXISTS (SELECT 1 FROM opened))
           SELECT * FROM opened`,
          [...params, admission.ticketId],
        )
      : await tx.query<PurchaseRow>(
          `INSERT INTO purchases (purchase_id, idempotency_key, request, sku, buyer_id, quantity, unit_id, status)
           VALUES ($1, $2, $3, $4, $5, $6, $7, 'holding')
           ON CONFLICT DO NOTHING RETURNING *`,
          params,
        );
    return rows[0] ? { outcome: 'created', record: toRecord(rows[0]) } : null;
  });
  if (opened) return opened;
  const known = await getPurchase(db, purchaseId);
  if (!known) throw new NotAdmittedError(`the admission for ${req.sku} is not valid or was already used`);
  return { outcome: 'known', record: known };
}

/**
 * What admission needs to know before the gate, in one round trip: the purchase this key already
 * made, and the purchase (if any) that holds `sku` for this buyer now.
 */
export interface AdmissionLookup {
  purchaseId: string;
  sku: string;
  buyerId: string;
}

/**
 * For each request, the purchase its key already made (if any), the buyer's place on the SKU (an
 * active hold, or a purchase waiting in line; if any) and the units the buyer bought of it: one
 * statement for many requests (the admission batches them under a crowd).
 */
export async function lookupForAdmission(
  db: Queryable,
  asks: AdmissionLookup[],
): Promise<{ record: PurchaseRecord | null; heldBy: string | null; bought: number }[]> {
  const { rows } = await db.query<PurchaseRow & { in_ord: string; held_by_now: string | null; bought: number }>(
    `SELECT i.in_ord, p.*, ${heldBySql('i.in_sku', 'i.in_buyer', 'i.in_pid')} AS held_by_now,
            (SELECT coalesce(sum(b.quantity), 0)::int FROM holds b
              WHERE b.sku = i.in_sku AND b.buyer_id = i.in_buyer AND b.status = 'sold') AS bought
       FROM unnest($1::text[], $2::text[], $3::text[]) WITH ORDINALITY AS i(in_pid, in_sku, in_buyer, in_ord)
       LEFT JOIN purchases p ON p.purchase_id = i.in_pid
      ORDER BY i.in_ord`,
    [asks.map((a) => a.purchaseId), asks.map((a) => a.sku), asks.map((a) => a.buyerId)],
  );
  return rows.map((r) => ({ record: r.purchase_id ? toRecord(r) : null, heldBy: r.held_by_now, bought: r.bought }));
}
