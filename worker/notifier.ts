import { WorkflowExecutionAlreadyStartedError, type Client } from '@temporalio/client';
import { dispatchNotification, type Notifier } from '../activities/notifications';
import type { Db } from '../store/db';
import { owedNotifications } from '../store/notifications';
import {
  NOTIFICATION_HAND_OVER_MS,
  notificationTaskQueue,
  notificationWorkflowId,
  type NotificationInput,
} from '../vocabulary';

// Hands buyer notifications to Temporal: one delivery workflow per notification and channel
// (workflows/notification.ts), on the notifications task queue, its id the delivery's, so starting
// it twice (an activity retried, two workers starting up) runs it once.

/** The notifier of the worker's channels; the support CLI's requeue starts the same workflows. */
export function createNotifier(client: Client, taskQueue: string, channels: string[]): Notifier {
  return {
    channels,
    async dispatch(notificationId, owed) {
      await Promise.all(owed.map((channel) => startDelivery(client, taskQueue, { notificationId, channel })));
    },
  };
}

/** Starts one delivery's workflow; one already running for it is left to finish. */
export async function startDelivery(client: Client, taskQueue: string, input: NotificationInput): Promise<void> {
  try {
    await client.workflow.start('notificationWorkflow', {
      workflowId: notificationWorkflowId(taskQueue, input),
      taskQueue: notificationTaskQueue(taskQueue),
      args: [input],
    });
  } catch (err) {
    if (!(err instanceof WorkflowExecutionAlreadyStartedError)) throw err;
  }
}

/** How many notifications one look hands over. */
const BATCH = 500;

/**
 * Every notification with a delivery owed on this worker's channels that no workflow has gets its
 * workflows: rows an earlier version's outbox left at the upgrade, written while no channel was set,
 * requeued by support, or whose hand-over failed. A delivery already delivered is not sent again:
 * its activity finds it sent. Returns how many notifications it handed over.
 */
export async function dispatchOwed(db: Db, notifier: Notifier): Promise<number> {
  if (notifier.channels.length === 0) return 0;
  let total = 0;
  let after = '0';
  for (;;) {
    const ids = await owedNotifications(db, notifier.channels, after, BATCH);
    for (const id of ids) await dispatchNotification(db, notifier, id);
    total += ids.length;
    if (ids.length < BATCH) return total;
    after = ids[ids.length - 1];
  }
}

/** Hands over what is owed now and every `everyMs` (NOTIFICATION_HAND_OVER_MS); `stop` ends it. */
export function startHandOver(
  db: Db,
  notifier: Notifier,
  log: (line: string) => void,
  everyMs = NOTIFICATION_HAND_OVER_MS,
): { stop(): void } {
  const look = () =>
    dispatchOwed(db, notifier).then(
      (n) => {
        if (n) log(`buyer notifications: ${n} owed handed to Temporal`);
      },
      (err: Error) => log(`buyer notifications: handing over: ${err.message}`),
    );
  void look();
  const timer = setInterval(() => void look(), everyMs);
  return { stop: () => clearInterval(timer) };
}
