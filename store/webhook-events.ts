import type { Db } from './db';

// Stripe events seen (`webhook_events`), for dedupe: an event is skipped only once its saga has it.

export type WebhookEventStatus = 'received' | 'delivered' | 'ignored' | 'rejected';

/** Records an event that concerns nothing of ours (or nothing the purchase can still act on). */
export async function recordIgnoredEvent(
  db: Db,
  eventId: string,
  type: string,
  purchaseId: string | null,
): Promise<void> {
  await db.query(
    `INSERT INTO webhook_events (event_id, type, purchase_id, status) VALUES ($1, $2, $3, 'ignored')
     ON CONFLICT (event_id) DO UPDATE SET status = 'ignored' WHERE webhook_events.status = 'received'`,
    [eventId, type, purchaseId],
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
     ON CONFLICT (event_id) DO UPDATE SET event_id = EXCLUDED.event_id RETURNING status`,
    [eventId, type, purchaseId],
  );
  return rows[0].status;
}

/** The saga has the event: later deliveries are duplicates. */
export async function markEventDelivered(db: Db, eventId: string): Promise<void> {
  await db.query(`UPDATE webhook_events SET status = 'delivered', delivered_at = now() WHERE event_id = $1`, [eventId]);
}

/** Records a verified event that is not its purchase's own (another session, amount, currency or mode), with why. */
export async function recordRejectedEvent(
  db: Db,
  eventId: string,
  type: string,
  purchaseId: string,
  why: string,
): Promise<void> {
  await db.query(
    `INSERT INTO webhook_events (event_id, type, purchase_id, status, why) VALUES ($1, $2, $3, 'rejected', $4)
     ON CONFLICT (event_id) DO NOTHING`,
    [eventId, type, purchaseId, why],
  );
}
