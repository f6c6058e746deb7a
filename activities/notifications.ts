import { ApplicationFailure, Context } from '@temporalio/activity';
import type { Db } from '../store/db';
import type { NotificationChannel, NotificationInput } from '../vocabulary';
import {
  fanOut,
  markDead,
  markDispatched,
  markFailed,
  markSent,
  startAttempt,
  type NotificationMessage,
} from '../store/notifications';

// The activities of buyer notifications (workflows/notification.ts), on their own task queue: one
// delivery attempt on one channel, and the bookkeeping around it. Temporal retries an attempt that
// failed; a channel's refusal for good (PermanentFailure) is not retried.

/** How deliveries are retried: the worker's NOTIFY_* settings, read by each delivery workflow. */
export interface DeliveryPolicy {
  /** One attempt's deadline. */
  timeoutMs: number;
  /** The first retry waits this long, each next one twice as long, up to `retryMaxMs`. */
  retryBaseMs: number;
  retryMaxMs: number;
  /** Attempts on one channel before the delivery is dead. */
  maxAttempts: number;
  /** From the first attempt, how long retries go on; 0: no limit. */
  maxAgeMs: number;
}

/** A refusal that retrying would get again: the delivery goes dead without further attempts. */
export class PermanentFailure extends Error {}
PermanentFailure.prototype.name = 'PermanentFailure';

/** What a channel did: delivered, or had no one to deliver to (an email to a buyer id without `@`). */
export type Sent = 'delivered' | 'skipped';

/** One way a notification reaches the buyer: the merchant's webhook, email, the log. */
export interface Channel {
  name: NotificationChannel;
  send(m: NotificationMessage): Promise<Sent>;
}

/** What became of one delivery attempt (the `outcome` label of the deliveries counter). */
export type DeliveryOutcome = Sent | 'failed' | 'dead';

/** Hands notification deliveries to Temporal: one workflow per delivery (worker/notifier.ts). */
export interface Notifier {
  /** The channels this worker delivers by. */
  channels: string[];
  /** Starts the delivery workflow of each (a running one is left as it is). */
  dispatch(notificationId: string, channels: string[]): Promise<void>;
}

/** Fans a notification out to the worker's channels and hands the deliveries owed to Temporal. */
export async function dispatchNotification(db: Db, notifier: Notifier, id: string): Promise<void> {
  if (notifier.channels.length === 0) return;
  const owed = await fanOut(db, id, notifier.channels);
  if (owed.length === 0) return;
  await notifier.dispatch(id, owed);
  await markDispatched(db, id, owed);
}

export function createNotificationActivities(deps: {
  db: Db;
  channels: Channel[];
  policy: DeliveryPolicy;
  onOutcome?: (channel: string, outcome: DeliveryOutcome) => void;
  log?: (line: string) => void;
}) {
  const { db, policy } = deps;
  const channels = new Map<string, Channel>(deps.channels.map((c) => [c.name, c]));
  const count = deps.onOutcome ?? (() => {});
  const log = deps.log ?? (() => {});
  return {
    /** The same for every delivery today; asked per delivery (`NotificationInput`) so a channel may get its own. */
    async deliveryPolicy(input: NotificationInput): Promise<DeliveryPolicy> {
      void input;
      return policy;
    },

    /**
     * One attempt of delivery `channel` of notification `id`. Resolves when delivered (or already
     * delivered by an attempt whose answer was lost); throws to be retried, or non-retryable when the
     * channel refused for good. `maxAttempts`: a failure of the last one counts dead, not failed.
     */
    async deliverNotification(id: string, channel: string, maxAttempts: number): Promise<void> {
      const { attempt } = Context.current().info;
      const m = await startAttempt(db, id, channel, attempt);
      if (!m) throw ApplicationFailure.nonRetryable(`notification ${id} has no delivery on ${channel}`);
      if (m.sent) return;
      const by = channels.get(channel);
      // A worker without this channel (its settings changed): the attempt fails, another worker may have it.
      if (!by) throw new Error(`this worker does not deliver by ${channel}`);
      const about = `ntf_${id} (purchase ${m.purchaseId}) by ${channel}, attempt ${attempt}`;
      let sent: Sent;
      try {
        sent = await by.send(m);
      } catch (err) {
        const why = (err as Error).message;
        await markFailed(db, m, why);
        const permanent = err instanceof PermanentFailure;
        if (!permanent && attempt < maxAttempts) count(channel, 'failed');
        log(`notification ${about} failed: ${why}${permanent ? ' (refused for good)' : ''}`);
        if (permanent) throw ApplicationFailure.nonRetryable(why, 'PermanentFailure');
        throw ApplicationFailure.retryable(why, 'DeliveryFailed');
      }
      await markSent(db, m);
      count(channel, sent);
    },

    /** The delivery is not tried again until support requeues it. */
    async markNotificationDead(id: string, channel: string, why: string): Promise<void> {
      await markDead(db, { id, channel }, why);
      count(channel, 'dead');
      log(`notification ntf_${id} by ${channel}: dead (${why}): npm run support -- notifications list`);
    },
  };
}

export type NotificationActivities = ReturnType<typeof createNotificationActivities>;
