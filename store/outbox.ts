import type { Db } from './db';

// The buyer notifications outbox (table `notifications`, rows written by `notifyBuyer`). The sender
// claims due rows for a lease, delivers them, then marks each one sent or schedules its next attempt.

export interface OutboxMessage {
  /** The row id: stable across retries, so the receiver can drop a repeat. */
  id: string;
  purchaseId: string;
  buyerId: string;
  kind: string;
  message: string;
  createdAt: string;
  /** This delivery is attempt number `attempts` (1 for the first). */
  attempts: number;
}

interface OutboxRow {
  id: string;
  purchase_id: string;
  buyer_id: string;
  kind: string;
  message: string;
  created_at: Date;
  attempts: number;
}

/**
 * Claims up to `limit` due rows for `leaseMs`: their next attempt moves past the lease and their
 * attempt count goes up, in one statement, so a sender that dies mid-delivery leaves them to be
 * retried when the lease lapses. SKIP LOCKED: several senders claim disjoint rows without waiting.
 */
export async function claimDue(db: Db, o: { limit: number; leaseMs: number }): Promise<OutboxMessage[]> {
  const { rows } = await db.query<OutboxRow>(
    `UPDATE notifications n
        SET attempts = n.attempts + 1, next_attempt_at = now() + $2 * interval '1 millisecond'
       FROM (SELECT id FROM notifications
              WHERE sent_at IS NULL AND next_attempt_at <= now()
              ORDER BY next_attempt_at, id
              LIMIT $1
              FOR UPDATE SKIP LOCKED) due
      WHERE n.id = due.id
  RETURNING n.id, n.purchase_id, n.buyer_id, n.kind, n.message, n.created_at, n.attempts`,
    [o.limit, o.leaseMs],
  );
  return rows
    .map((r) => ({
      id: String(r.id),
      purchaseId: r.purchase_id,
      buyerId: r.buyer_id,
      kind: r.kind,
      message: r.message,
      createdAt: r.created_at.toISOString(),
      attempts: r.attempts,
    }))
    .sort((a, b) => Number(a.id) - Number(b.id));
}

/** Delivered: never sent again. */
export async function markSent(db: Db, id: string): Promise<void> {
  await db.query('UPDATE notifications SET sent_at = now(), last_error = NULL WHERE id = $1 AND sent_at IS NULL', [id]);
}

/**
 * Not delivered this time: tried again after `retryInMs`, with why it failed kept for operators.
 * Only by the sender still holding the claim (`attempts` as claimed): a sender whose lease lapsed
 * while another claimed the row must not move that one's schedule.
 */
export async function markFailed(
  db: Db,
  id: string,
  error: string,
  retryInMs: number,
  attempts: number,
): Promise<void> {
  await db.query(
    `UPDATE notifications SET last_error = $2, next_attempt_at = now() + $3 * interval '1 millisecond'
      WHERE id = $1 AND sent_at IS NULL AND attempts = $4`,
    [id, error.slice(0, 1000), retryInMs, attempts],
  );
}

/** What waits to be sent: how many, and the oldest (for readiness of the outbox in operations). */
export async function outboxBacklog(db: Db): Promise<{ pending: number; oldest?: string; failing: number }> {
  const { rows } = await db.query<{ pending: number; oldest: Date | null; failing: number }>(
    `SELECT count(*)::int AS pending, min(created_at) AS oldest,
            count(*) FILTER (WHERE last_error IS NOT NULL)::int AS failing
       FROM notifications WHERE sent_at IS NULL`,
  );
  return { pending: rows[0].pending, oldest: rows[0].oldest?.toISOString(), failing: rows[0].failing };
}
