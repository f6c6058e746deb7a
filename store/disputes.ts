import {
  CLOSED_DISPUTE_STATUSES,
  DISPUTE_NEEDS_RESPONSE_STATUSES,
  OPEN_DISPUTE_STATUSES,
  type DisputeSummary,
} from '../vocabulary';
import type { Db, Queryable } from './db';

// Disputes (chargebacks) on the purchases' payments, as Stripe's `charge.dispute.*` events report
// them: one per purchase (Stripe allows one per charge), on the purchase's row. Read by support
// (`npm run support -- disputes`) and by the dispute gauges of /metrics, through the partial index
// `purchases_disputed` (migration 030).

/**
 * Records a dispute on the purchase: the status Stripe reported, its reason and its response
 * deadline. A closed dispute (won, lost) is not reopened by a late or redelivered event of the same
 * dispute. Returns null when the record was left as it was, else whether the dispute's status moved
 * (a new dispute, or a new status of this one: Stripe sends two events as a dispute is won).
 */
export async function recordDispute(
  db: Queryable,
  purchaseId: string,
  dispute: DisputeSummary,
): Promise<{ moved: boolean } | null> {
  const { rows } = await db.query<{ moved: boolean }>(
    `WITH old AS (SELECT dispute_id, dispute_status FROM purchases WHERE purchase_id = $1 FOR UPDATE)
     UPDATE purchases p
        SET dispute_id = $2, dispute_status = $3, dispute_reason = $4,
            dispute_due_by = COALESCE($5, p.dispute_due_by), updated_at = now()
       FROM old
      WHERE p.purchase_id = $1
        AND NOT (old.dispute_id IS NOT DISTINCT FROM $2 AND old.dispute_status = ANY($6::text[])
                 AND old.dispute_status <> $3)
      RETURNING old.dispute_id IS DISTINCT FROM $2 OR old.dispute_status IS DISTINCT FROM $3 AS moved`,
    [
      purchaseId,
      dispute.disputeId,
      dispute.status,
      dispute.reason,
      dispute.dueBy ?? null,
      [...CLOSED_DISPUTE_STATUSES],
    ],
  );
  return rows[0] ?? null;
}

export interface DisputedPurchase {
  purchaseId: string;
  sku: string;
  buyerId: string;
  purchaseStatus: string;
  amountCents?: number;
  currency?: string;
  paymentIntentId?: string;
  dispute: DisputeSummary;
  /** The purchase's refund, if one was asked for (Stripe refuses it while the dispute is open). */
  refundStatus?: string;
  updatedAt: string;
}

interface DisputeRow {
  purchase_id: string;
  sku: string;
  buyer_id: string;
  status: string;
  amount_cents: string | null;
  currency: string | null;
  payment_intent_id: string | null;
  dispute_id: string;
  dispute_status: string;
  dispute_reason: string | null;
  dispute_due_by: Date | null;
  refund_status: string | null;
  updated_at: Date;
}

/**
 * The disputed purchases, those still open first by their response deadline (the most urgent
 * first), then the closed ones newest first. `open`: only those the bank has not decided yet.
 */
export async function listDisputes(
  db: Db,
  opts: { open?: boolean; sku?: string; limit?: number } = {},
): Promise<DisputedPurchase[]> {
  const { rows } = await db.query<DisputeRow>(
    `SELECT purchase_id, sku, buyer_id, status, amount_cents, currency, payment_intent_id, dispute_id,
            dispute_status, dispute_reason, dispute_due_by, refund_status, updated_at
       FROM purchases
      WHERE dispute_id IS NOT NULL
        AND ($1::boolean IS NOT TRUE OR dispute_status = ANY($2::text[]))
        AND ($3::text IS NULL OR sku = $3)
      ORDER BY dispute_status = ANY($2::text[]) DESC, dispute_due_by ASC NULLS LAST, updated_at DESC
      LIMIT $4`,
    [opts.open ?? false, [...OPEN_DISPUTE_STATUSES], opts.sku ?? null, opts.limit ?? 1000],
  );
  return rows.map((r) => ({
    purchaseId: r.purchase_id,
    sku: r.sku,
    buyerId: r.buyer_id,
    purchaseStatus: r.status,
    ...(r.amount_cents !== null ? { amountCents: Number(r.amount_cents) } : {}),
    ...(r.currency ? { currency: r.currency } : {}),
    ...(r.payment_intent_id ? { paymentIntentId: r.payment_intent_id } : {}),
    dispute: {
      disputeId: r.dispute_id,
      status: r.dispute_status,
      reason: r.dispute_reason ?? '',
      ...(r.dispute_due_by ? { dueBy: r.dispute_due_by.toISOString() } : {}),
    },
    ...(r.refund_status ? { refundStatus: r.refund_status } : {}),
    updatedAt: r.updated_at.toISOString(),
  }));
}

export interface DisputeStats {
  /** Disputes by Stripe status (every status seen on a purchase). */
  byStatus: { status: string; n: number }[];
  /** The earliest response deadline of the disputes waiting for the merchant's evidence (Unix seconds); null: none waits. */
  nextDueBy: number | null;
}

/** What the dispute gauges export: one read over the partial index. */
export async function disputeStats(db: Db): Promise<DisputeStats> {
  const { rows } = await db.query<{ status: string; n: number; next_due: string | null }>(
    `SELECT dispute_status AS status, count(*)::int AS n,
            extract(epoch FROM min(dispute_due_by) FILTER (WHERE dispute_status = ANY($1::text[]))) AS next_due
       FROM purchases WHERE dispute_id IS NOT NULL GROUP BY dispute_status`,
    [[...DISPUTE_NEEDS_RESPONSE_STATUSES]],
  );
  const dues = rows.map((r) => r.next_due).filter((d): d is string => d !== null);
  return {
    byStatus: rows.map((r) => ({ status: r.status, n: r.n })),
    nextDueBy: dues.length ? Math.min(...dues.map(Number)) : null,
  };
}
