import { proxyActivities, TimeoutFailure, type ActivityFailure } from '@temporalio/workflow';
import type { NotificationActivities } from '../activities/notifications';
import type { NotificationInput } from '../vocabulary';
import { ACTIVITY_TIMEOUT_MS } from '../vocabulary/limits';

// One delivery of a buyer notification on one channel (the merchant's webhook, email, the log),
// started when the saga writes the notification (activities `notifyBuyer`), by a worker starting up
// for the ones owed, or by support requeuing a dead one. Temporal does what an outbox's sender did:
// the delivery activity's retry policy is the backoff (NOTIFY_RETRY_BASE_MS doubling up to
// NOTIFY_RETRY_MAX_MS), its attempts cap (NOTIFY_MAX_ATTEMPTS) and its schedule-to-close the age
// limit (NOTIFY_MAX_AGE_MS); a refusal for good is not retried. Whatever ends the retries, the
// delivery is marked dead with its last error, for support (`npm run support -- notifications list`).

/** Reading the policy and marking a delivery dead: Postgres steps, retried until they succeed. */
const bookkeeping = proxyActivities<NotificationActivities>({
  startToCloseTimeout: ACTIVITY_TIMEOUT_MS,
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '1 minute' },
});

export async function notificationWorkflow(input: NotificationInput): Promise<'delivered' | 'dead'> {
  const policy = await bookkeeping.deliveryPolicy(input);
  const { deliverNotification } = proxyActivities<NotificationActivities>({
    startToCloseTimeout: policy.timeoutMs,
    ...(policy.maxAgeMs > 0 ? { scheduleToCloseTimeout: policy.maxAgeMs } : {}),
    retry: {
      initialInterval: policy.retryBaseMs,
      backoffCoefficient: 2,
      maximumInterval: policy.retryMaxMs,
      maximumAttempts: policy.maxAttempts,
    },
  });
  try {
    await deliverNotification(input.notificationId, input.channel, policy.maxAttempts);
    return 'delivered';
  } catch (err) {
    await bookkeeping.markNotificationDead(input.notificationId, input.channel, whyDead(err as ActivityFailure));
    return 'dead';
  }
}

/** The last attempt's error; the age limit when that ended the retries; the attempt's deadline when the last one outlasted it. */
function whyDead(err: ActivityFailure): string {
  const cause = err.cause;
  if (!(cause instanceof TimeoutFailure)) return (cause as Error).message;
  if (cause.timeoutType === 'SCHEDULE_TO_CLOSE') return 'too old to retry (NOTIFY_MAX_AGE_MS)';
  return 'the last attempt outlasted NOTIFY_TIMEOUT_MS (no answer in time)';
}
