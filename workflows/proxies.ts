import {
  proxyActivities,
  proxyLocalActivities,
  type ActivityOptions,
  type LocalActivityOptions,
} from '@temporalio/workflow';
import type { Activities } from '../activities';

// How the workflows call their activities: timeouts and retry policies, one proxy per kind of step.

/**
 * Temporal priority of every step that settles money or stock already in play (confirm, re-take,
 * release, expire, refund, bookkeeping): 1, ahead of opening new sessions (the server default, 3).
 * Under a crowd the activity queue fills with new purchases' checkout steps; a paid buyer's
 * confirmation or a late payment's refund must not wait behind them. Servers without priority
 * ignore it (the dev server needs `matching.useNewMatcher`, which `dev/temporal.ts` turns on).
 */
const SETTLE_FIRST = { priorityKey: 1 };

// Postgres and bookkeeping steps: retried until they succeed (transient faults heal; a fault that
// does not heal shows up in the Temporal UI as a pending activity with its last failure).
export const acts = proxyActivities<Activities>({
  priority: SETTLE_FIRST,
  // Short: these are single transactions; a worker that died mid-call is noticed this soon.
  startToCloseTimeout: '10 seconds',
  retry: { initialInterval: '200 milliseconds', backoffCoefficient: 2, maximumInterval: '20 seconds' },
});

// The hold, as a local activity: it runs in the workflow task that scheduled it (no round trip
// through the server), and the hold desk still coalesces it with the other sagas of this worker.
export const localActs = proxyLocalActivities<Activities>({
  startToCloseTimeout: '10 seconds',
  retry: { initialInterval: '200 milliseconds', backoffCoefficient: 2, maximumInterval: '20 seconds' },
});

// Opening the session: a few quick retries for transient Stripe faults (with the same idempotency
// key, so one session at most), then give up and compensate rather than keep a buyer's unit forever.
const checkoutStep: ActivityOptions & LocalActivityOptions = {
  startToCloseTimeout: '20 seconds',
  retry: {
    initialInterval: '200 milliseconds',
    backoffCoefficient: 2,
    maximumInterval: '3 seconds',
    maximumAttempts: 6,
    nonRetryableErrorTypes: ['StripeRejected'],
  },
};
// The session, as a local activity too: the hold and the session run in the saga's first workflow task,
// so a buyer's checkout URL costs one workflow task and no activity task (the server is the crowd's
// bottleneck). A worker that dies mid-task leaves the task to time out and run again on another
// worker: the hold is keyed by purchase and the session by its idempotency key, so neither doubles.
export const localCheckoutActs = proxyLocalActivities<Activities>(checkoutStep);
/**
 * Closing the session a failed session step may have opened after all: off the first workflow task
 * (the purchase has already failed, no buyer waits on it), with the session step's own policy.
 */
export const checkoutActs = proxyActivities<Activities>(checkoutStep);

// Stripe calls after the session is open (expire, read, refund): transient faults are retried until
// they heal. A refusal (4xx) is not retried by the activity: the workflow flags the purchase
// `needs_attention` with Stripe's answer and tries again on its own schedule (attended.ts).
export const stripeActs = proxyActivities<Activities>({
  priority: SETTLE_FIRST,
  startToCloseTimeout: '20 seconds',
  retry: { initialInterval: '500 milliseconds', backoffCoefficient: 2, maximumInterval: '1 minute' },
});
