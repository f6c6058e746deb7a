import { randomUUID } from 'node:crypto';
import { ApplicationFailure, Context } from '@temporalio/activity';
import type { DeliveryPolicy, NotificationActivities } from '../../../activities/notifications';
import type { NotificationInput } from '../../../vocabulary';

// The fast tier's stand-in for the notification activities (activities/notifications.ts): each test
// opens a delivery with its own notification id and says what each attempt does; the fakes record
// the attempts and the dead marks. Retries in milliseconds (the dev server runs them about a second
// apart); email deliveries give up after 1.5 s (NOTIFY_MAX_AGE_MS), the others never; a log
// delivery's attempt times out after 300 ms (NOTIFY_TIMEOUT_MS), twice at most.

/** The policy of every fake delivery; email's has an age limit of 1.5 s, the log's attempts 300 ms each. */
export const FAST_POLICY: DeliveryPolicy = {
  timeoutMs: 5_000,
  retryBaseMs: 10,
  retryMaxMs: 20,
  maxAttempts: 3,
  maxAgeMs: 0,
};

export class Delivery {
  readonly notificationId = `n-${randomUUID()}`;
  /** Attempt numbers, as Temporal counted them. */
  readonly attempts: number[] = [];
  dead?: string;
  constructor(
    readonly channel: string,
    readonly attempt: (n: number) => Promise<void> | void,
  ) {}

  input(): NotificationInput {
    return { notificationId: this.notificationId, channel: this.channel };
  }
}

export class NotificationWorld {
  private readonly deliveries = new Map<string, Delivery>();

  /** A delivery whose attempt number `n` does what `attempt` does (throws to fail). */
  open(attempt: Delivery['attempt'], channel = 'webhook'): Delivery {
    const d = new Delivery(channel, attempt);
    this.deliveries.set(d.notificationId, d);
    return d;
  }

  private of(id: string): Delivery {
    const d = this.deliveries.get(id);
    if (!d) throw ApplicationFailure.nonRetryable(`no test delivery ${id}`, 'NoTestCase');
    return d;
  }

  activities(): NotificationActivities {
    return {
      deliveryPolicy: async (input) =>
        input.channel === 'email'
          ? { ...FAST_POLICY, maxAgeMs: 1_500 }
          : input.channel === 'log'
            ? { ...FAST_POLICY, timeoutMs: 300, maxAttempts: 2 }
            : FAST_POLICY,
      deliverNotification: async (id) => {
        const d = this.of(id);
        const n = Context.current().info.attempt;
        d.attempts.push(n);
        await d.attempt(n);
      },
      markNotificationDead: async (id, _channel, why) => {
        this.of(id).dead = why;
      },
    };
  }
}
