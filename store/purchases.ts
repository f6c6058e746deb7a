import { createHash } from 'node:crypto';
import {
  HOLDING_STATUSES,
  REFUNDABLE_STATUSES,
  type PurchaseRequest,
  PurchaseState,
  PurchaseStatus,
  Rejection,
} from '../vocabulary';
import type { Db, Queryable, Tx } from './db';

/** The durable record of a purchase (table `purchases`). */
export interface PurchaseRecord extends PurchaseState {
  idempotencyKey: string;
  request: PurchaseRequest;
  unitId?: string;
  createdAt: string;
  updatedAt: string;
  /** A delayed payment was completed in time and is settling since then (store/holds.ts marks it). */
  settlingSince?: string;
}

export interface PurchaseRow {
  purchase_id: string;
  idempotency_key: string;
  request: PurchaseRequest;
  sku: string;
  buyer_id: string;
  quantity: number;
  unit_id: string | null;
  status: PurchaseStatus;
  /** bigint: node-postgres returns it as a string. */
  amount_cents: string | number | null;
  currency: string | null;
  hold_expires_at: Date | null;
  checkout_session_id: string | null;
  checkout_url: string | null;
  payment_intent_id: string | null;
  reason: string | null;
  rejection: Rejection | null;
  held_by: string | null;
  refund_id: string | null;
  refund_status: string | null;
  refund_reason: string | null;
  refund_failure_reason: string | null;
  dispute_id: string | null;
  dispute_status: string | null;
  dispute_reason: string | null;
  dispute_due_by: Date | null;
  oversold: boolean;
  settling_at?: Date | null;
  created_at: Date;
  updated_at: Date;
}

export function toRecord(r: PurchaseRow): PurchaseRecord {
  return {
    purchaseId: r.purchase_id,
    idempotencyKey: r.idempotency_key,
    request: r.request,
    sku: r.sku,
    buyerId: r.buyer_id,
    quantity: r.quantity,
    unitId: r.unit_id ?? undefined,
    status: r.status,
    // Order totals are bounded at product creation far below 2^53, so a Number is exact.
    amountCents: r.amount_cents === null ? undefined : Number(r.amount_cents),
    currency: r.currency ?? undefined,
    holdExpiresAt: r.hold_expires_at?.toISOString(),
    sessionId: r.checkout_session_id ?? undefined,
    checkoutUrl: r.checkout_url ?? undefined,
    paymentIntentId: r.payment_intent_id ?? undefined,
    reason: r.reason ?? undefined,
    rejection: r.rejection ?? undefined,
    heldBy: r.held_by ?? undefined,
    refund: r.refund_status
      ? {
          status: r.refund_status,
          reason: r.refund_reason ?? '',
          refundId: r.refund_id ?? undefined,
          ...(r.refund_failure_reason ? { failureReason: r.refund_failure_reason } : {}),
        }
      : undefined,
    dispute: r.dispute_id
      ? {
          disputeId: r.dispute_id,
          status: r.dispute_status ?? '',
          reason: r.dispute_reason ?? '',
          ...(r.dispute_due_by ? { dueBy: r.dispute_due_by.toISOString() } : {}),
        }
      : undefined,
    oversold: r.oversold,
    ...(r.settling_at ? { settlingSince: r.settling_at.toISOString() } : {}),
    createdAt: r.created_at.toISOString(),
    updatedAt: r.updated_at.toISOString(),
  };
}

/**
 * A purchase id is derived from the buyer and their Idempotency-Key, so a retried POST finds the
 * same workflow (`purchase-<id>`) without a lookup, two buyers who pick the same key never meet,
 * and no random id ever reaches a Stripe key.
 */
export function purchaseIdFor(idempotencyKey: string, buyerId: string): string {
  const digest = createHash('sha256').update(buyerId).update('\n').update(idempotencyKey).digest('hex');
  return `pur_${digest.slice(0, 24)}`;
}

/** A buyer's purchases, newest first (refusals that wrote nothing but a record are left out). */
export async function buyerPurchases(db: Db, buyerId: string, limit: number): Promise<PurchaseRecord[]> {
  const { rows } = await db.query<PurchaseRow>(
    `SELECT * FROM purchases WHERE buyer_id = $1 AND status <> 'rejected' ORDER BY created_at DESC LIMIT $2`,
    [buyerId, limit],
  );
  return rows.map(toRecord);
}

export async function getPurchase(db: Queryable, purchaseId: string): Promise<PurchaseRecord | null> {
  const { rows } = await db.query<PurchaseRow>('SELECT * FROM purchases WHERE purchase_id = $1', [purchaseId]);
  return rows[0] ? toRecord(rows[0]) : null;
}

export type PurchasePatch = Partial<Omit<PurchaseState, 'purchaseId' | 'sku' | 'buyerId' | 'quantity'>>;

/**
 * Writes the saga's view of a purchase to its record. Idempotent: the same patch twice is the same
 * row. Returns when the purchase was created, or null when no row was written (none over `onlyFrom`).
 */
export async function recordPurchase(
  db: Db | Tx,
  purchaseId: string,
  patch: PurchasePatch,
  /** Write only over these statuses (a step that must not reopen a purchase already past it). */
  onlyFrom?: readonly PurchaseStatus[],
): Promise<{ createdAt: Date } | null> {
  const cols: Record<string, unknown> = {
    status: patch.status,
    amount_cents: patch.amountCents,
    currency: patch.currency,
    hold_expires_at: patch.holdExpiresAt,
    checkout_session_id: patch.sessionId,
    checkout_url: patch.checkoutUrl,
    payment_intent_id: patch.paymentIntentId,
    reason: patch.reason,
    rejection: patch.rejection,
    held_by: patch.heldBy,
    refund_reason: patch.refund?.reason,
    oversold: patch.oversold,
  };
  const set = Object.entries(cols).filter(([, v]) => v !== undefined);
  const values = set.map(([, v]) => v);
  let assignments = set.map(([k], i) => `${k} = $${i + 2}`);
  if (patch.refund) {
    // A refund's status only moves forward for the same refund (see refund_rank in migrations 007 and
    // 020); a write that names no refund (a refusal, a settlement by hand) is the saga's word and stands.
    values.push(patch.refund.refundId ?? null, patch.refund.status, patch.refund.failureReason ?? null);
    const [id, status, failure] = [`$${values.length - 1}`, `$${values.length}`, `$${values.length + 1}`];
    const newer = `(${id}::text IS NULL OR refund_id IS DISTINCT FROM ${id} OR refund_rank(${status}) >= refund_rank(refund_status))`;
    // News older than the refund's failure on the record (a saga finishing after its refund succeeded,
    // the failure heard since, whose saga no longer follows it) puts the purchase in front of support,
    // with why, whatever the write said: the refund on record failed.
    const overFailure = `(NOT ${newer} AND refund_status = 'failed')`;
    const failedReason = `CASE WHEN status = 'needs_attention' THEN reason
      ELSE 'the refund failed after it succeeded: ' || coalesce(refund_failure_reason, 'no reason given') END`;
    assignments = assignments.map((a, i) => {
      const k = set[i][0];
      if (k === 'status') return `status = CASE WHEN ${overFailure} THEN 'needs_attention' ELSE $${i + 2} END`;
      if (k === 'reason') return `reason = CASE WHEN ${overFailure} THEN ${failedReason} ELSE $${i + 2} END`;
      return a;
    });
    if (patch.status !== undefined && patch.reason === undefined)
      assignments.push(`reason = CASE WHEN ${overFailure} THEN ${failedReason} ELSE reason END`);
    assignments.push(
      `refund_id = COALESCE(${id}, refund_id)`,
      `refund_status = CASE WHEN ${newer} THEN ${status} ELSE refund_status END`,
      `refund_failure_reason = CASE WHEN ${newer} THEN ${failure} ELSE refund_failure_reason END`,
    );
  }
  if (assignments.length === 0) return null;
  let where = 'purchase_id = $1';
  if (onlyFrom) {
    values.push(onlyFrom);
    where += ` AND status = ANY($${values.length + 1}::text[])`;
  }
  const { rows } = await db.query<{ created_at: Date }>(
    `UPDATE purchases SET ${assignments.join(', ')}, updated_at = now() WHERE ${where} RETURNING created_at`,
    [purchaseId, ...values],
  );
  return rows[0] ? { createdAt: rows[0].created_at } : null;
}

/** Purchases still holding or awaiting payment whose record has not changed since `before`, oldest first. */
export async function listUnsettledSince(
  db: Db,
  o: { before: Date; sku?: string; limit: number },
): Promise<PurchaseRecord[]> {
  const { rows } = await db.query<PurchaseRow>(
    `SELECT * FROM purchases
      WHERE status = ANY($1) AND updated_at < $2 AND ($3::text IS NULL OR sku = $3)
      ORDER BY updated_at LIMIT $4`,
    [HOLDING_STATUSES, o.before, o.sku ?? null, o.limit],
  );
  return rows.map(toRecord);
}

/** Paid orders of a SKU that took units beyond stock (the oversell allowance), oldest first. */
export async function listOversoldOrders(db: Db, sku: string): Promise<string[]> {
  const { rows } = await db.query<{ purchase_id: string }>(
    `SELECT purchase_id FROM purchases WHERE sku = $1 AND oversold AND status = ANY($2::text[]) ORDER BY created_at`,
    [sku, REFUNDABLE_STATUSES],
  );
  return rows.map((r) => r.purchase_id);
}

export async function appendAudit(
  db: Queryable,
  purchaseId: string,
  actor: string,
  action: string,
  detail: Record<string, unknown>,
): Promise<void> {
  await db.query('INSERT INTO audit_log (purchase_id, actor, action, detail) VALUES ($1, $2, $3, $4)', [
    purchaseId,
    actor,
    action,
    JSON.stringify(detail),
  ]);
}

/** Records a message to the buyer, at most one of each kind per purchase; its id (the first one's on a repeat). */
export async function notifyBuyer(
  db: Db,
  purchaseId: string,
  buyerId: string,
  kind: string,
  message: string,
): Promise<string> {
  const { rows } = await db.query<{ id: string }>(
    `WITH added AS (INSERT INTO notifications (purchase_id, buyer_id, kind, message) VALUES ($1, $2, $3, $4)
                    ON CONFLICT (purchase_id, kind) DO NOTHING RETURNING id)
     SELECT id FROM added UNION ALL SELECT id FROM notifications WHERE purchase_id = $1 AND kind = $3`,
    [purchaseId, buyerId, kind, message],
  );
  return String(rows[0].id);
}

/** What support looks a purchase up by: the buyer, the Checkout Session, or the PaymentIntent. */
export type PurchaseLookup = { buyerId: string } | { sessionId: string } | { paymentIntentId: string };

/** The longest list one lookup returns (a buyer with more is asked about by session or payment). */
export const MAX_LOOKUP = 100;

/** Purchases matching one key, newest first; each key has an index (buyer, session, PaymentIntent). */
export async function findPurchases(db: Db, by: PurchaseLookup, limit = MAX_LOOKUP): Promise<PurchaseRecord[]> {
  const [column, value] =
    'buyerId' in by
      ? ['buyer_id', by.buyerId]
      : 'sessionId' in by
        ? ['checkout_session_id', by.sessionId]
        : ['payment_intent_id', by.paymentIntentId];
  const { rows } = await db.query<PurchaseRow>(
    `SELECT * FROM purchases WHERE ${column} = $1 AND status <> 'rejected' ORDER BY created_at DESC LIMIT $2`,
    [value, limit],
  );
  return rows.map(toRecord);
}

/** How many purchases are in each status. */
export async function countByStatus(db: Db): Promise<{ status: PurchaseStatus; n: number }[]> {
  const { rows } = await db.query<{ status: PurchaseStatus; n: number }>(
    'SELECT status, count(*)::int AS n FROM purchases GROUP BY status',
  );
  return rows;
}

/**
 * Purchases in `needs_attention` (money waits for support), whatever their saga's state: a refund's
 * failure can arrive after the saga closed. Oldest change first.
 */
export async function listNeedingAttention(db: Db, o: { sku?: string; limit: number }): Promise<PurchaseRecord[]> {
  const { rows } = await db.query<PurchaseRow>(
    `SELECT * FROM purchases
      WHERE status = 'needs_attention' AND ($1::text IS NULL OR sku = $1)
      ORDER BY updated_at LIMIT $2`,
    [o.sku ?? null, o.limit],
  );
  return rows.map(toRecord);
}

/**
 * The expiry of the purchase's Checkout Session: the one already chosen, else `proposed`, kept from
 * now on (the first attempt to open the session chooses it; every later one sends the same request).
 * `peek`: only read it (null when no attempt ever chose one, so none can have opened a session).
 */
export async function sessionExpiryOf(db: Db, purchaseId: string, proposed: Date | 'peek'): Promise<Date | null> {
  const { rows } =
    proposed === 'peek'
      ? await db.query<{ at: Date | null }>('SELECT session_expires_at AS at FROM purchases WHERE purchase_id = $1', [
          purchaseId,
        ])
      : await db.query<{ at: Date | null }>(
          `UPDATE purchases SET session_expires_at = coalesce(session_expires_at, $2)
            WHERE purchase_id = $1 RETURNING session_expires_at AS at`,
          [purchaseId, proposed],
        );
  // No record (a saga started without one): the proposal stands for this attempt alone.
  if (!rows[0]) return proposed === 'peek' ? null : proposed;
  return rows[0].at;
}
