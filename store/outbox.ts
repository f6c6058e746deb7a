import type { Db } from './db';

// The buyer notifications outbox: table `notifications` (rows written by `notifyBuyer`) and their
// deliveries, one per channel (`notification_deliveries`, migration 013). The sender fans each new
// notification out to its channels, claims due deliveries for a lease, delivers them, then marks
// each one sent, schedules its next attempt, or marks it dead (never tried again until requeued).

export interface OutboxMessage {
  /** The notification's id: stable across retries and channels, so the receiver can drop a repeat. */
  id: string;
  /** The channel this delivery goes by (webhook, email, log). */
  channel: string;
  purchaseId: string;
  buyerId: string;
  kind: string;
  message: string;
  createdAt: string;
  /** This delivery is attempt number `attempts` on its channel (1 for the first). */
  attempts: number;
}

interface OutboxRow {
  notification_id: string;
  channel: string;
  purchase_id: string;
  buyer_id: string;
  kind: string;
  message: string;
  created_at: Date;
  attempts: number;
}

/** How many new notifications one look fans out to the channels. */
const FAN_OUT_BATCH = 500;

/**
 * Gives every notification not yet fanned out a delivery on each of `channels` (the sender's), so
 * each channel keeps its own schedule and outcome. SKIP LOCKED: two senders fan out disjoint rows.
 */
async function fanOut(db: Db, channels: string[]): Promise<void> {
  await db.query(
    `WITH fresh AS (
       UPDATE notifications n SET fanned_out_at = now()
         FROM (SELECT id FROM notifications WHERE fanned_out_at IS NULL ORDER BY id LIMIT $2
                 FOR UPDATE SKIP LOCKED) f
        WHERE n.id = f.id
    RETURNING n.id)
     INSERT INTO notification_deliveries (notification_id, channel)
     SELECT fresh.id, c FROM fresh CROSS JOIN unnest($1::text[]) c
         ON CONFLICT DO NOTHING`,
    [channels, FAN_OUT_BATCH],
  );
}

/**
 * Claims up to `limit` due deliveries on `channels` for `leaseMs`: their next attempt moves past the
 * lease and their attempt count goes up, in one statement, so a sender that dies mid-delivery leaves
 * them to be retried when the lease lapses. SKIP LOCKED: several senders claim disjoint rows without
 * waiting. A delivery on a channel no sender has any more waits (counted pending) until one has it.
 */
export async function claimDue(
  db: Db,
  o: { limit: number; leaseMs: number; channels: string[] },
): Promise<OutboxMessage[]> {
  await fanOut(db, o.channels);
  const { rows } = await db.query<OutboxRow>(
    `UPDATE notification_deliveries d
        SET attempts = d.attempts + 1, next_attempt_at = now() + $2 * interval '1 millisecond'
       FROM (SELECT notification_id, channel FROM notification_deliveries
              WHERE sent_at IS NULL AND dead_at IS NULL AND next_attempt_at <= now() AND channel = ANY($3::text[])
              ORDER BY next_attempt_at, notification_id
              LIMIT $1
              FOR UPDATE SKIP LOCKED) due,
            notifications n
      WHERE d.notification_id = due.notification_id AND d.channel = due.channel AND n.id = d.notification_id
  RETURNING d.notification_id, d.channel, d.attempts, n.purchase_id, n.buyer_id, n.kind, n.message, n.created_at`,
    [o.limit, o.leaseMs, o.channels],
  );
  return rows
    .map((r) => ({
      id: String(r.notification_id),
      channel: r.channel,
      purchaseId: r.purchase_id,
      buyerId: r.buyer_id,
      kind: r.kind,
      message: r.message,
      createdAt: r.created_at.toISOString(),
      attempts: r.attempts,
    }))
    .sort((a, b) => Number(a.id) - Number(b.id) || a.channel.localeCompare(b.channel));
}

/**
 * Delivered on its channel: never sent there again. The notification counts sent once every one of
 * its channels delivered: checked after this delivery's own commit, so of two channels finishing at
 * once the later check sees both.
 */
export async function markSent(db: Db, m: Pick<OutboxMessage, 'id' | 'channel'>): Promise<void> {
  await db.query(
    `UPDATE notification_deliveries SET sent_at = now(), dead_at = NULL, last_error = NULL
      WHERE notification_id = $1 AND channel = $2 AND sent_at IS NULL`,
    [m.id, m.channel],
  );
  await db.query(
    `UPDATE notifications n SET sent_at = now()
      WHERE n.id = $1 AND n.sent_at IS NULL
        AND NOT EXISTS (SELECT 1 FROM notification_deliveries d WHERE d.notification_id = $1 AND d.sent_at IS NULL)`,
    [m.id],
  );
}

/**
 * Not delivered this time: tried again after `retryInMs`, with why it failed kept for operators.
 * Only by the sender still holding the claim (`attempts` as claimed): a sender whose lease lapsed
 * while another claimed the row must not move that one's schedule.
 */
export async function markFailed(
  db: Db,
  m: Pick<OutboxMessage, 'id' | 'channel' | 'attempts'>,
  error: string,
  retryInMs: number,
): Promise<void> {
  await db.query(
    `UPDATE notification_deliveries SET last_error = $3, next_attempt_at = now() + $4 * interval '1 millisecond'
      WHERE notification_id = $1 AND channel = $2 AND sent_at IS NULL AND attempts = $5`,
    [m.id, m.channel, error.slice(0, 1000), retryInMs, m.attempts],
  );
}

/** Never deliverable (or out of attempts): not tried again until an operator requeues it. */
export async function markDead(
  db: Db,
  m: Pick<OutboxMessage, 'id' | 'channel' | 'attempts'>,
  error: string,
): Promise<void> {
  await db.query(
    `UPDATE notification_deliveries SET last_error = $3, dead_at = now()
      WHERE notification_id = $1 AND channel = $2 AND sent_at IS NULL AND attempts = $4`,
    [m.id, m.channel, error.slice(0, 1000), m.attempts],
  );
}

export interface OutboxCount {
  channel: string;
  pending: number;
  dead: number;
}

/**
 * Deliveries not sent, per channel: pending (to be tried) and dead. Notifications not yet fanned out
 * count pending on each of `channels` (the sender's), where they will be delivered.
 */
export async function outboxCounts(db: Db, channels: string[]): Promise<OutboxCount[]> {
  const { rows } = await db.query<OutboxCount>(
    `WITH unfanned AS (SELECT count(*)::int AS n FROM notifications WHERE fanned_out_at IS NULL),
          kept AS (SELECT channel, count(*) FILTER (WHERE dead_at IS NULL)::int AS pending,
                          count(*) FILTER (WHERE dead_at IS NOT NULL)::int AS dead
                     FROM notification_deliveries WHERE sent_at IS NULL GROUP BY channel)
   SELECT c.channel, coalesce(k.pending, 0) + CASE WHEN c.channel = ANY($1::text[]) THEN u.n ELSE 0 END AS pending,
          coalesce(k.dead, 0) AS dead
     FROM (SELECT channel FROM kept UNION SELECT unnest($1::text[])) c
     LEFT JOIN kept k USING (channel) CROSS JOIN unfanned u
    ORDER BY c.channel`,
    [channels],
  );
  return rows;
}

export interface DeadDelivery {
  id: string;
  channel: string;
  purchaseId: string;
  buyerId: string;
  kind: string;
  attempts: number;
  lastError: string | null;
  createdAt: string;
  deadAt: string;
}

/** The dead deliveries, oldest death first, optionally of one channel. */
export async function listDeadDeliveries(db: Db, o: { channel?: string; limit: number }): Promise<DeadDelivery[]> {
  const { rows } = await db.query<{
    notification_id: string;
    channel: string;
    purchase_id: string;
    buyer_id: string;
    kind: string;
    attempts: number;
    last_error: string | null;
    created_at: Date;
    dead_at: Date;
  }>(
    `SELECT d.notification_id, d.channel, n.purchase_id, n.buyer_id, n.kind, d.attempts, d.last_error,
            n.created_at, d.dead_at
       FROM notification_deliveries d JOIN notifications n ON n.id = d.notification_id
      WHERE d.dead_at IS NOT NULL AND d.sent_at IS NULL AND ($1::text IS NULL OR d.channel = $1)
      ORDER BY d.dead_at, d.notification_id, d.channel
      LIMIT $2`,
    [o.channel ?? null, o.limit],
  );
  return rows.map((r) => ({
    id: String(r.notification_id),
    channel: r.channel,
    purchaseId: r.purchase_id,
    buyerId: r.buyer_id,
    kind: r.kind,
    attempts: r.attempts,
    lastError: r.last_error,
    createdAt: r.created_at.toISOString(),
    deadAt: r.dead_at.toISOString(),
  }));
}

/**
 * Dead deliveries back in the queue, due now with a fresh attempt count (the cap counts again from
 * there); their last error stays until the next attempt. `ids` undefined: every dead one (of
 * `channel`, when given). Returns the requeued deliveries.
 */
export async function requeueDead(
  db: Db,
  o: { ids?: string[]; channel?: string },
): Promise<{ id: string; channel: string }[]> {
  const { rows } = await db.query<{ notification_id: string; channel: string }>(
    `UPDATE notification_deliveries SET dead_at = NULL, attempts = 0, next_attempt_at = now()
      WHERE dead_at IS NOT NULL AND sent_at IS NULL
        AND ($1::bigint[] IS NULL OR notification_id = ANY($1::bigint[]))
        AND ($2::text IS NULL OR channel = $2)
  RETURNING notification_id, channel`,
    [o.ids ?? null, o.channel ?? null],
  );
  return rows
    .map((r) => ({ id: String(r.notification_id), channel: r.channel }))
    .sort((a, b) => Number(a.id) - Number(b.id) || a.channel.localeCompare(b.channel));
}
