import { randomUUID } from 'node:crypto';
import type { ExecutionContext } from 'ava';
import { Client } from '@temporalio/client';
import { NativeConnection, Worker } from '@temporalio/worker';
import pg from 'pg';
import { dispatchNotification, type DeliveryOutcome, type Notifier } from '../../activities/notifications';
import { notifyBuyer } from '../../store/purchases';
import { notificationTaskQueue } from '../../vocabulary';
import { startHandOver } from '../../worker/notifier';
import { notificationParts } from './notification-parts';
import { until } from './poll';
import { createOwnDatabase } from './system';
import { temporalAddress, workflowBundle } from './temporal';

// The notification tests' side of the worker (test/worker/notification-*.test.ts): each test has a
// database of its own and a task queue of its own, a notifications worker on the suite's Temporal
// with fast retries, and the workers' hand-over of owed deliveries (support's requeue).

export { FAST_RETRIES } from './notification-parts';

/** What every notification written by `notification` says. */
export const NOTIFICATION_MESSAGE = 'Your order was refunded: damaged box';

/** A database of the test's own, migrated, closed at teardown. */
export async function ownDb(t: ExecutionContext): Promise<{ db: pg.Pool; url: string }> {
  const url = await createOwnDatabase();
  const db = new pg.Pool({ connectionString: url, max: 6 });
  t.teardown(() => db.end());
  return { db, url };
}

/**
 * A notifications worker of the test's own over `db` (its own task queue), with the hand-over of
 * owed deliveries running, stopped at teardown; returns the outcomes it reported, its log, its
 * notifier and its task queue (the CLI's TASK_QUEUE).
 */
export async function sender(
  t: ExecutionContext,
  db: pg.Pool,
  env: Record<string, string>,
  onOutcome?: (channel: string, outcome: DeliveryOutcome) => void,
) {
  const taskQueue = `notify-test-${randomUUID()}`;
  const connection = await NativeConnection.connect({ address: temporalAddress() });
  const client = new Client({ connection });
  const parts = notificationParts(db, client, taskQueue, env, onOutcome);
  const worker = await Worker.create({
    connection,
    taskQueue: notificationTaskQueue(taskQueue),
    workflowBundle: await workflowBundle(),
    activities: parts.activities,
  });
  const running = worker.run();
  // Every half second rather than the worker's five: a requeued delivery is handed over soon.
  const handOver = startHandOver(db, parts.notifier, (l) => parts.lines.push(l), 500);
  t.teardown(async () => {
    handOver.stop();
    worker.shutdown();
    await running;
    await connection.close();
  });
  return { ...parts, taskQueue };
}

/**
 * A notification row as a saga's `notifyBuyer` writes it, for a purchase of its own, handed to
 * `notifier` as that activity does (without one it waits, as at an upgrade); its id.
 */
export async function notification(db: pg.Pool, o: { notifier?: Notifier; buyer?: string } = {}): Promise<string> {
  const purchaseId = `pur_${Math.random().toString(36).slice(2)}`;
  const id = await notifyBuyer(db, purchaseId, o.buyer ?? 'buyer-1', 'refunded_by_support', NOTIFICATION_MESSAGE);
  if (o.notifier) await dispatchNotification(db, o.notifier, id);
  return id;
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
 * read once a delivery is sent: a delivery is marked, then the notification, apart.
 */
export async function notificationSent(db: pg.Pool, id: string): Promise<Date> {
  return until(`notification ${id} sent`, async () => {
    const { rows } = await db.query('SELECT sent_at FROM notifications WHERE id = $1', [id]);
    return rows[0].sent_at ?? undefined;
  });
}
