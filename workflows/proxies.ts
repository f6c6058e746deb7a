import {
  proxyActivities,
  proxyLocalActivities,
  workflowInfo,
  type ActivityOptions,
  type RetryPolicy,
} from '@temporalio/workflow';
import { stripeTaskQueue } from '../vocabulary';
import { ACTIVITY_TIMEOUT_MS, STRIPE_CALL_TIMEOUT_MS } from '../vocabulary/limits';
import type { StoreActivities, StripeActivities } from '../activities';

// How the workflows call their activities: timeouts, retry policies and task queues, one proxy per
// kind of step. Every call to Stripe runs on the Stripe task queue (`<taskQueue>-stripe`), whose
// workers set the deployment's Stripe budget as its rate limit: the Temporal server enforces it
// across all of them, so however many workers run, Stripe sees one paced client.

/**
 * Temporal priority of every step that settles money or stock already in play (confirm, re-take,
 * release, expire, refund, reads of payments and refunds, bookkeeping): 1, ahead of opening new
 * sessions (3, the server's default). On the Stripe queue the budget's turns go to these first: a
 * paid buyer's confirmation or a late payment's refund never waits behind a queue of new checkouts.
 */
const SETTLE_FIRST = { priorityKey: 1 };
const NEW_CHECKOUT = { priorityKey: 3 };

/** The saga's own queue's Stripe queue (a test's unique queue has its own, so do two deployments). */
function stripeQueue(): string {
  return stripeTaskQueue(workflowInfo().taskQueue);
}

// Postgres and bookkeeping steps: retried until they succeed (transient faults heal; a fault that
// does not heal shows up in the Temporal UI as a pending activity with its last failure).
const STORE_STEP = {
  // Short: these are single transactions; a worker that died mid-call is noticed this soon.
  startToCloseTimeout: ACTIVITY_TIMEOUT_MS,
  retry: { initialInterval: '200 milliseconds', backoffCoefficient: 2, maximumInterval: '20 seconds' },
} satisfies ActivityOptions;

export const acts = proxyActivities<StoreActivities>({ ...STORE_STEP, priority: SETTLE_FIRST });

// The hold, as a local activity: it runs in the workflow task that scheduled it (no round trip
// through the server), and the hold desk still coalesces it with the other sagas of this worker.
export const localActs = proxyLocalActivities<StoreActivities>(STORE_STEP);

/**
 * Opening the session, on the Stripe queue at new-checkout priority: it waits for its turn in the
 * budget as long as the hold lasts (`holdEnd`: the step's schedule-to-close), and no longer, since a
 * session after the hold would sell a unit that is not the buyer's. Transient faults are retried with
 * the same idempotency key (one session at most); a 429 is retried after its own jittered delay
 * (activities/stripe.ts) and never fails the purchase while the hold lasts; other faults fail it after
 * CHECKOUT_ATTEMPTS_ON_FAULTS attempts (activities/checkout-session.ts), and it is compensated.
 */

export function checkoutActs(holdEnd: number): StripeActivities {
  return proxyActivities<StripeActivities>({
    taskQueue: stripeQueue(),
    priority: NEW_CHECKOUT,
    startToCloseTimeout: STRIPE_CALL_TIMEOUT_MS,
    scheduleToCloseTimeout: Math.max(1_000, holdEnd - Date.now()),
    retry: {
      initialInterval: '200 milliseconds',
      backoffCoefficient: 2,
      maximumInterval: '3 seconds',
      nonRetryableErrorTypes: ['StripeRejected', 'HoldLapsed'],
    },
  });
}

const STRIPE_SETTLE_RETRY: RetryPolicy = {
  initialInterval: '500 milliseconds',
  backoffCoefficient: 2,
  maximumInterval: '1 minute',
};

// Stripe calls after the session is open (expire, read, refund), at settlement priority: transient
// faults and rate limits are retried until they heal. A refusal (4xx) is not retried by the activity:
// the workflow flags the purchase `needs_attention` with Stripe's answer and tries again on its own
// schedule (attended.ts).
const settleOptions = (): ActivityOptions => ({
  taskQueue: stripeQueue(),
  priority: SETTLE_FIRST,
  startToCloseTimeout: STRIPE_CALL_TIMEOUT_MS,
  retry: STRIPE_SETTLE_RETRY,
});

/** The Stripe steps that move or protect money already in play, on the Stripe queue, first in line. */
export function stripeActs(): StripeActivities {
  return proxyActivities<StripeActivities>(settleOptions());
}
