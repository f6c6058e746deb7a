import type { Db } from './db';
import { getPurchase, type PurchaseRecord } from './purchases';

// What Stripe tells about a purchase's money after the payment (refunds; disputes: disputes.ts), and money that
// arrived on a session that named one of our purchases without being its own (`stray_payments`).

/** The purchase paid with this PaymentIntent (refunds and disputes name the payment, not the purchase). */
export async function findPurchaseByPaymentIntent(db: Db, paymentIntentId: string): Promise<PurchaseRecord | null> {
  const { rows } = await db.query<{ purchase_id: string }>(
    'SELECT purchase_id FROM purchases WHERE payment_intent_id = $1 ORDER BY created_at LIMIT 1',
    [paymentIntentId],
  );
  return rows[0] ? getPurchase(db, rows[0].purchase_id) : null;
}

/**
 * Records what Stripe says of a refund of this purchase: the status moves only forward for the same
 * refund (`refund_rank`), so a redelivered or out-of-order event cannot undo a later one. A refund
 * made outside the service (the Dashboard) is recorded when the purchase has none of its own.
 */
export async function recordRefundNews(
  db: Db,
  purchaseId: string,
  news: { refundId?: string; status: string; failureReason?: string; reason?: string },
): Promise<boolean> {
  const { rowCount } = await db.query(
    `UPDATE purchases
        SET refund_status = $3,
            refund_id = COALESCE($2, refund_id),
            refund_failure_reason = COALESCE($4, refund_failure_reason),
            refund_reason = COALESCE(refund_reason, $5),
            updated_at = now()
      WHERE purchase_id = $1
        AND (refund_status IS NULL
             OR (refund_id IS NOT DISTINCT FROM COALESCE($2, refund_id) AND refund_rank($3) >= refund_rank(refund_status)))`,
    [purchaseId, news.refundId ?? null, news.status, news.failureReason ?? null, news.reason ?? null],
  );
  return (rowCount ?? 0) > 0;
}

/** `refused`: not refunded, as Stripe's session or our records showed the money is not stray (no money moved). */
export type StrayStatus = 'refunding' | 'refunded' | 'needs_attention' | 'settled_by_hand' | 'refused';

export interface StrayPayment {
  sessionId: string;
  claimedPurchase: string;
  paymentIntentId?: string;
  amountCents?: number;
  currency?: string;
  why: string;
  status: StrayStatus;
  refundId?: string;
  detail?: string;
  createdAt: string;
  updatedAt: string;
}

interface StrayRow {
  session_id: string;
  claimed_purchase: string;
  payment_intent_id: string | null;
  amount_cents: string | null;
  currency: string | null;
  why: string;
  status: StrayStatus;
  refund_id: string | null;
  detail: string | null;
  created_at: Date;
  updated_at: Date;
}

function toStray(r: StrayRow): StrayPayment {
  return {
    sessionId: r.session_id,
    claimedPurchase: r.claimed_purchase,
    paymentIntentId: r.payment_intent_id ?? undefined,
    amountCents: r.amount_cents === null ? undefined : Number(r.amount_cents),
    currency: r.currency ?? undefined,
    why: r.why,
    status: r.status,
    refundId: r.refund_id ?? undefined,
    detail: r.detail ?? undefined,
    createdAt: r.created_at.toISOString(),
    updatedAt: r.updated_at.toISOString(),
  };
}

/** Notes a stray payment the first time it is seen (later events of the same session change nothing). */
export async function noteStrayPayment(
  db: Db,
  s: Pick<StrayPayment, 'sessionId' | 'claimedPurchase' | 'paymentIntentId' | 'amountCents' | 'currency' | 'why'>,
): Promise<void> {
  await db.query(
    `INSERT INTO stray_payments (session_id, claimed_purchase, payment_intent_id, amount_cents, currency, why, status)
     VALUES ($1, $2, $3, $4, $5, $6, 'refunding')
     ON CONFLICT (session_id) DO UPDATE SET payment_intent_id = COALESCE(stray_payments.payment_intent_id, EXCLUDED.payment_intent_id)`,
    [s.sessionId, s.claimedPurchase, s.paymentIntentId ?? null, s.amountCents ?? null, s.currency ?? null, s.why],
  );
}

export async function updateStrayPayment(
  db: Db,
  sessionId: string,
  patch: { status: StrayStatus; refundId?: string; detail?: string; paymentIntentId?: string },
): Promise<void> {
  // Its saga's word that the refund succeeded, once the webhook has put that refund's failure in front
  // of support (failStrayRefundLate), is older news: the row stays where the failure put it.
  await db.query(
    `UPDATE stray_payments
        SET status = CASE WHEN ${OVER_FAILURE} THEN status ELSE $2 END,
            detail = CASE WHEN ${OVER_FAILURE} THEN detail ELSE COALESCE($4, detail) END,
            refund_id = COALESCE($3, refund_id), payment_intent_id = COALESCE($5, payment_intent_id), updated_at = now()
      WHERE session_id = $1`,
    [sessionId, patch.status, patch.refundId ?? null, patch.detail ?? null, patch.paymentIntentId ?? null],
  );
}

/** In an UPDATE of stray_payments with `$2` the status written and `$3` the refund: `refunded` over its own failure. */
const OVER_FAILURE = `($2 = 'refunded' AND status = 'needs_attention' AND refund_id = $3)`;

/**
 * A stray payment's refund that failed (a refund goes pending, then succeeded, and a failure may
 * follow; its saga follows it only until it succeeds): the row goes to `needs_attention` with why,
 * when that refund is the row's own and the row says `refunding` or `refunded` (not one settled by
 * hand). A saga still following it records the failure itself as well. True when it was written.
 */
export async function failStrayRefundLate(db: Db, sessionId: string, refundId: string, detail: string) {
  const { rowCount } = await db.query(
    `UPDATE stray_payments SET status = 'needs_attention', detail = $3, updated_at = now()
      WHERE session_id = $1 AND refund_id = $2 AND status IN ('refunding', 'refunded')`,
    [sessionId, refundId, detail],
  );
  return (rowCount ?? 0) > 0;
}

/** A purchase whose own Checkout Session this is, or whose payment one of these PaymentIntents is. */
export interface RecordedOwner {
  purchaseId: string;
  status: string;
  sessionId?: string;
  paymentIntentId?: string;
}

export async function findPaymentOwner(
  db: Db,
  sessionId: string,
  paymentIntentIds: string[],
): Promise<RecordedOwner | null> {
  const { rows } = await db.query<{
    purchase_id: string;
    status: string;
    checkout_session_id: string | null;
    payment_intent_id: string | null;
  }>(
    `SELECT purchase_id, status, checkout_session_id, payment_intent_id FROM purchases
      WHERE checkout_session_id = $1 OR payment_intent_id = ANY($2::text[])
      ORDER BY created_at LIMIT 1`,
    [sessionId, paymentIntentIds],
  );
  const r = rows[0];
  if (!r) return null;
  return {
    purchaseId: r.purchase_id,
    status: r.status,
    ...(r.checkout_session_id ? { sessionId: r.checkout_session_id } : {}),
    ...(r.payment_intent_id ? { paymentIntentId: r.payment_intent_id } : {}),
  };
}

/**
 * Marks a stray payment `refused`, with an `audit_log` row `stray_refund_refused` on the purchase it
 * claimed and on `owner` (whose money it is), in one statement. True only the first time: a retried
 * step neither writes the rows twice nor counts the refusal twice.
 */
export async function refuseStrayPayment(
  db: Db,
  sessionId: string,
  r: { detail: string; paymentIntentId?: string; owner?: string; facts: Record<string, unknown> },
): Promise<boolean> {
  const { rowCount } = await db.query(
    `WITH refused AS (
       UPDATE stray_payments SET status = 'refused', detail = $2,
              payment_intent_id = COALESCE(payment_intent_id, $3), updated_at = now()
        WHERE session_id = $1 AND status <> 'refused'
        RETURNING claimed_purchase
     )
     INSERT INTO audit_log (purchase_id, actor, action, detail)
     SELECT DISTINCT p, 'saga', 'stray_refund_refused', $5::jsonb
       FROM refused CROSS JOIN LATERAL unnest(ARRAY[refused.claimed_purchase, $4::text]) AS p
      WHERE p IS NOT NULL`,
    [
      sessionId,
      r.detail,
      r.paymentIntentId ?? null,
      r.owner ?? null,
      JSON.stringify({ sessionId, why: r.detail, ...r.facts }),
    ],
  );
  return (rowCount ?? 0) > 0;
}

export async function getStrayPayment(db: Db, sessionId: string): Promise<StrayPayment | null> {
  const { rows } = await db.query<StrayRow>('SELECT * FROM stray_payments WHERE session_id = $1', [sessionId]);
  return rows[0] ? toStray(rows[0]) : null;
}

/** Stray payments that name this purchase (support looks them up by purchase), oldest first. */
export async function listStrayPayments(db: Db, o: { claimedPurchase?: string; status?: StrayStatus } = {}) {
  const { rows } = await db.query<StrayRow>(
    `SELECT * FROM stray_payments WHERE ($1::text IS NULL OR claimed_purchase = $1) AND ($2::text IS NULL OR status = $2)
      ORDER BY created_at`,
    [o.claimedPurchase ?? null, o.status ?? null],
  );
  return rows.map(toStray);
}
