import type { Db } from './db';

// Stripe events seen (`webhook_events`), for dedupe: an event is skipped only once its saga has it.
// An event id is one event: the digest of its content is kept from its first delivery.

export type WebhookEventStatus = 'received' | 'delivered' | 'ignored' | 'rejected';

/**
 * Records an event id with the digest of its content on its first delivery (`received` until the
 * route says what became of it). Returns false, and counts it in `other_bodies`, when the id was
 * first received with other content: such a delivery must not be acted on.
 */
export async function claimEventId(db: Db, eventId: string, type: string, contentSha256: string): Promise<boolean> {
  const { rows } = await db.query<{ content_sha256: string }>(
    `INSERT INTO webhook_events (event_id, type, status, content_sha256) VALUES ($1, $2, 'received', $3)
     ON CONFLICT (event_id) DO UPDATE SET
       content_sha256 = coalesce(webhook_events.content_sha256, EXCLUDED.content_sha256),
       other_bodies = webhook_events.other_bodies
         + CASE WHEN webhook_events.content_sha256 <> EXCLUDED.content_sha256 THEN 1 ELSE 0 END
     RETURNING content_sha256`,
    [eventId, type, contentSha256],
  );
  return rows[0].content_sha256 === contentSha256;
}

/** Records an event that concerns nothing of ours (or nothing the purchase can still act on), with why if told. */
export async function recordIgnoredEvent(
  db: Db,
  eventId: string,
  type: string,
  purchaseId: string | null,
  why?: string,
): Promise<void> {
  await db.query(
    `INSERT INTO webhook_events (event_id, type, purchase_id, status, why) VALUES ($1, $2, $3, 'ignored', $4)
     ON CONFLICT (event_id) DO UPDATE SET status = 'ignored', purchase_id = EXCLUDED.purchase_id, why = EXCLUDED.why
       WHERE webhook_events.status = 'received'`,
    [eventId, type, purchaseId, why ?? null],
  );
}

/** Records an event for a purchase; returns its status, `delivered` when an earlier delivery already reached the saga. */
export async function recordReceivedEvent(
  db: Db,
  eventId: string,
  type: string,
  purchaseId: string,
): Promise<WebhookEventStatus> {
  const { rows } = await db.query<{ status: WebhookEventStatus }>(
    `INSERT INTO webhook_events (event_id, type, purchase_id, status) VALUES ($1, $2, $3, 'received')
     ON CONFLICT (event_id) DO UPDATE SET purchase_id = EXCLUDED.purchase_id RETURNING status`,
    [eventId, type, purchaseId],
  );
  return rows[0].status;
}

/** The event is handled: its saga has it (later deliveries are duplicates), or its money news is recorded. */
export async function markEventDelivered(db: Db, eventId: string): Promise<void> {
  await db.query(`UPDATE webhook_events SET status = 'delivered', delivered_at = now() WHERE event_id = $1`, [eventId]);
}

/**
 * Records a verified event that is not its purchase's own (another session, amount, currency or
 * mode), or that lacks what Stripe always sends (no purchase then), with why.
 */
export async function recordRejectedEvent(
  db: Db,
  eventId: string,
  type: string,
  purchaseId: string | null,
  why: string,
): Promise<void> {
  await db.query(
    `INSERT INTO webhook_events (event_id, type, purchase_id, status, why) VALUES ($1, $2, $3, 'rejected', $4)
     ON CONFLICT (event_id) DO UPDATE SET status = 'rejected', purchase_id = EXCLUDED.purchase_id, why = EXCLUDED.why
       WHERE webhook_events.status = 'received'`,
    [eventId, type, purchaseId, why],
  );
}
