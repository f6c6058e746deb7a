import type { Db } from './db';

// Buyer notifications: table `notifications` (one row per purchase and kind, written by
// `notifyBuyer`, store/purchases.ts) and their deliveries, one per channel
// (`notification_deliveries`, migration 013). Temporal delivers them: one workflow per delivery
// (workflows/notification.ts), whose activity's retry policy does the backoff and the giving up; these
// rows are what support and the metrics read: sent, pending, or dead with the last error.

/** One delivery of a notification on one channel, as a channel sends it. */
export interface NotificationMessage {
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

/**
 * Gives notification `id` a delivery on each of `channels` (the worker's), so each channel keeps its
 * own outcome; a delivery it already has is kept. Returns the channels whose delivery is owed (neither
 * sent nor dead) and not handed to Temporal yet: the ones to dispatch.
 */
export async function fanOut(db: Db, id: string, channels: string[]): Promise<string[]> {
  await db.query(
    `WITH d AS (INSERT INTO notification_deliveries (notification_id, channel)
                SELECT $1, c FROM unnest($2::text[]) c ON CONFLICT DO NOTHING)
     UPDATE notifications SET fanned_out_at = coalesce(fanned_out_at, now()) WHERE id = $1`,
    [id, channels],
  );
  const { rows } = await db.query<{ channel: string }>(
    `SELECT channel FROM notification_deliveries
      WHERE notification_id = $1 AND channel = ANY($2::text[]) AND sent_at IS NULL AND dead_at IS NULL
        AND dispatched_at IS NULL
      ORDER BY channel`,
    [id, channels],
  );
  return rows.map((r) => r.channel);
}

/** Deliveries handed to Temporal: their workflows deliver them from here on. */
export async function markDispatched(db: Db, id: string, channels: string[]): Promise<void> {
  await db.query(
    `UPDATE notification_deliveries SET dispatched_at = now()
      WHERE notification_id = $1 AND channel = ANY($2::text[]) AND dispatched_at IS NULL`,
    [id, channels],
  );
}

/**
 * The notifications with a delivery owed on `channels` that no workflow has (never fanned out, or a
 * delivery neither sent, dead nor dispatched), by id after `after`: rows an earlier version's outbox
 * left at the upgrade, written while no channel was set, requeued by support, or whose hand-over failed.
 */
export async function owedNotifications(db: Db, channels: string[], after: string, limit: number): Promise<string[]> {
  const { rows } = await db.query<{ id: string }>(
    `SELECT n.id FROM notifications n
      WHERE n.sent_at IS NULL AND n.id > $3
        AND (n.fanned_out_at IS NULL OR EXISTS (
              SELECT 1 FROM notification_deliveries d
               WHERE d.notification_id = n.id AND d.channel = ANY($1::text[])
                 AND d.sent_at IS NULL AND d.dead_at IS NULL AND d.dispatched_at IS NULL))
      ORDER BY n.id LIMIT $2`,
    [channels, limit, after],
  );
  return rows.map((r) => String(r.id));
}

/** Delivery `channel` of notification `id` as attempt `attempt`, with what it says; undefined if there is none. */
export async function startAttempt(
  db: Db,
  id: string,
  channel: string,
  attempt: number,
): Promise<(NotificationMessage & { sent: boolean }) | undefined> {
  const { rows } = await db.query<{
    purchase_id: string;
    buyer_id: string;
    kind: string;
    message: string;
    created_at: Date;
    sent_at: Date | null;
  }>(
    `UPDATE notification_deliveries d SET attempts = CASE WHEN d.sent_at IS NULL THEN $3 ELSE d.attempts END
       FROM notifications n
      WHERE d.notification_id = $1 AND d.channel = $2 AND n.id = d.notification_id
  RETURNING n.purchase_id, n.buyer_id, n.kind, n.message, n.created_at, d.sent_at`,
    [id, channel, attempt],
  );
  const r = rows[0];
  if (!r) return undefined;
  return {
    id,
    channel,
    purchaseId: r.purchase_id,
    buyerId: r.buyer_id,
    kind: r.kind,
    message: r.message,
    createdAt: r.created_at.toISOString(),
    attempts: attempt,
    sent: r.sent_at !== null,
  };
}

/**
 * Delivered on its channel: never sent there again. The notification counts sent once every one of
 * its channels delivered: checked after this delivery's own commit, so of two channels finishing at
 * once the later check sees both.
 */
export async function markSent(db: Db, m: Pick<NotificationMessage, 'id' | 'channel'>): Promise<void> {
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

/** Not delivered this time: why, kept for operators (Temporal schedules the next attempt). */
export async function markFailed(db: Db, m: Pick<NotificationMessage, 'id' | 'channel'>, error: string): Promise<void> {
  await db.query(
    `UPDATE notification_deliveries SET last_error = $3 WHERE notification_id = $1 AND channel = $2 AND sent_at IS NULL`,
    [m.id, m.channel, error.slice(0, 1000)],
  );
}

/** Never deliverable, out of attempts or too old: not tried again until an operator requeues it. */
export async function markDead(db: Db, m: Pick<NotificationMessage, 'id' | 'channel'>, error: string): Promise<void> {
  await db.query(
    `UPDATE notification_deliveries SET last_error = $3, dead_at = now()
      WHERE notification_id = $1 AND channel = $2 AND sent_at IS NULL`,
    [m.id, m.channel, error.slice(0, 1000)],
  );
}

export interface DeliveryCount {
  channel: string;
  pending: number;
  dead: number;
}

/**
 * Deliveries not sent, per channel: pending (being tried) and dead. Notifications not yet fanned out
 * count pending on each of `channels` (the worker's), where they will be delivered.
 */
export async function deliveryCounts(db: Db, channels: string[]): Promise<DeliveryCount[]> {
  const { rows } = await db.query<DeliveryCount>(
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
 * Dead deliveries owed again, with a fresh attempt count; their last error stays until the next
 * attempt. The workers hand them to Temporal (worker/notifier.ts), so this needs Postgres only.
 * `ids` undefined: every dead one (of `channel`, when given). Returns the requeued deliveries.
 */
export async function requeueDead(
  db: Db,
  o: { ids?: string[]; channel?: string },
): Promise<{ id: string; channel: string }[]> {
  const { rows } = await db.query<{ notification_id: string; channel: string }>(
    `UPDATE notification_deliveries SET dead_at = NULL, attempts = 0, dispatched_at = NULL
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
