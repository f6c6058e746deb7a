import type { ExecutionContext } from 'ava';
import pg from 'pg';
import { loadNotifyConfig } from '../../config/notify';
import { notifyBuyer } from '../../store/purchases';
import { startOutboxSender, type DeliveryOutcome } from '../../worker/outbox-sender';
import { until } from './poll';
import { createOwnDatabase } from './system';

// The outbox tests' side of the sender (test/worker/outbox-*.test.ts): each test has a database of
// its own, because a sender drains every row of its database, and a sender with fast retries.

/** What every notification written by `notification` says. */
export const NOTIFICATION_MESSAGE = 'Your order was refunded: damaged box';

/** A database of the test's own, migrated, closed at teardown. */
export async function ownDb(t: ExecutionContext): Promise<{ db: pg.Pool; url: string }> {
  const url = await createOwnDatabase();
  const db = new pg.Pool({ connectionString: url, max: 4 });
  t.teardown(() => db.end());
  return { db, url };
}

/** A notification row as a saga writes it, for a purchase of its own; its id. */
export async function notification(db: pg.Pool, buyer = 'buyer-1'): Promise<string> {
  const purchaseId = `pur_${Math.random().toString(36).slice(2)}`;
  await notifyBuyer(db, purchaseId, buyer, 'refunded_by_support', NOTIFICATION_MESSAGE);
  const { rows } = await db.query('SELECT id FROM notifications WHERE purchase_id = $1', [purchaseId]);
  return String(rows[0].id);
}

/** A sender with fast retries, stopped at teardown; returns the outcomes it reported and its log. */
export function sender(
  t: ExecutionContext,
  db: pg.Pool,
  env: Record<string, string>,
  onOutcome?: (channel: string, outcome: DeliveryOutcome) => void,
) {
  const outcomes: string[] = [];
  const lines: string[] = [];
  const config = loadNotifyConfig({
    NOTIFY_POLL_MS: '30',
    NOTIFY_RETRY_BASE_MS: '40',
    NOTIFY_RETRY_MAX_MS: '100',
    NOTIFY_TIMEOUT_MS: '2000',
    ...env,
  });
  const s = startOutboxSender(
    db,
    config,
    (l) => lines.push(l),
    (channel, outcome) => {
      outcomes.push(`${channel}:${outcome}`);
      onOutcome?.(channel, outcome);
    },
  );
  t.teardown(() => s.stop());
  return { outcomes, lines };
}

/** Notification `id`'s row in notification_deliveries on `channel`, if it was fanned out there. */
export async function delivery(db: pg.Pool, id: string, channel = 'webhook') {
  const { rows } = await db.query('SELECT * FROM notification_deliveries WHERE notification_id = $1 AND channel = $2', [
    id,
    channel,
  ]);
  return rows[0];
}

/**
 * Waits for notification `id` to count sent (every channel delivered); its sent_at. Polled, not
 * read once a delivery is sent: the sender marks the delivery, then the notification, apart.
 */
export async function notificationSent(db: pg.Pool, id: string): Promise<Date> {
  return until(`notification ${id} sent`, async () => {
    const { rows } = await db.query('SELECT sent_at FROM notifications WHERE id = $1', [id]);
    return rows[0].sent_at ?? undefined;
  });
}
