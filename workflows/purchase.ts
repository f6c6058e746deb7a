import {
  ActivityFailure,
  ApplicationFailure,
  CancellationScope,
  condition,
  isCancellation,
  patched,
  proxyActivities,
  setHandler,
  upsertSearchAttributes,
} from '@temporalio/workflow';
import type { Activities, SessionState } from '../activities';
import {
  cancelSignal,
  checkoutReadyUpdate,
  FINAL_STATUSES,
  PAID_STATUSES,
  HoldExpiresAtKey,
  paymentEventSignal,
  purchaseStateQuery,
  PurchaseStatusKey,
  type PaymentEvent,
  type PurchaseInput,
  type PurchaseState,
  type PurchaseStatus,
} from './definitions';

// Postgres and bookkeeping steps: retried until they succeed (transient faults heal; a fault that
// does not heal shows up in the Temporal UI as a pending activity with its last failure).
const acts = proxyActivities<Activities>({
  // Short: these are single transactions; a worker that died mid-call is noticed this soon.
  startToCloseTimeout: '10 seconds',
  retry: { initialInterval: '200 milliseconds', backoffCoefficient: 2, maximumInterval: '20 seconds' },
});

// Opening the session: a few quick retries for transient Stripe faults (with the same idempotency
// key, so one session at most), then give up and compensate rather than keep a buyer's unit forever.
const checkoutActs = proxyActivities<Activities>({
  startToCloseTimeout: '20 seconds',
  retry: {
    initialInterval: '200 milliseconds',
    backoffCoefficient: 2,
    maximumInterval: '3 seconds',
    maximumAttempts: 6,
    nonRetryableErrorTypes: ['StripeRejected'],
  },
});

// Stripe calls after the session is open (expire, refund): they must happen, so they are retried
// until they do, even when Stripe refuses (a refund of a disputed charge, say): a saga that gave up
// would keep a buyer's money silently, while one that keeps retrying shows up in
// `npm run sagas -- stuck` with Stripe's answer, for support to resolve.
const stripeActs = proxyActivities<Activities>({
  startToCloseTimeout: '20 seconds',
  retry: { initialInterval: '500 milliseconds', backoffCoefficient: 2, maximumInterval: '1 minute' },
});

/** How long a session that was completed with a delayed payment method may take to settle. */
const ASYNC_SETTLE_TIMEOUT = '7 days';
const ASYNC_SETTLE_SECONDS = 7 * 24 * 3600;
/** How long to wait for the webhook of a session Stripe already reports paid, before reading it ourselves. */
const PAID_EVENT_GRACE = '1 minute';

type Payment = 'none' | 'pending' | 'paid' | 'failed';

/**
 * One purchase, from hold to outcome. Takes the hold (compensation: release), opens the Checkout
 * Session (compensation: expire), then waits for a payment event or the hold timer. Paid in time:
 * the hold becomes a sale. Hold lapsed: stock goes back once, the session is expired, and a payment
 * that still arrives re-takes a unit or is refunded at once. Workflow id: `purchase-<purchaseId>`.
 */
export async function purchaseWorkflow(input: PurchaseInput): Promise<PurchaseState> {
  const state: PurchaseState = {
    purchaseId: input.purchaseId,
    sku: input.sku,
    buyerId: input.buyerId,
    quantity: input.quantity,
    status: 'holding',
  };
  const seen = new Set<string>();
  let payment = 'none' as Payment;
  let declined = false as boolean;
  let declines = 0;
  let sessionExpired = false as boolean;
  let cancelRequested = false as boolean;

  setHandler(purchaseStateQuery, () => state);
  setHandler(checkoutReadyUpdate, async () => {
    await condition(() => state.status !== 'holding');
    return state;
  });
  setHandler(cancelSignal, () => {
    cancelRequested = true;
  });
  // Redelivered and out-of-order events fold into one monotonic view: paid or failed wins over pending.
  setHandler(paymentEventSignal, (e: PaymentEvent) => {
    if (seen.has(e.eventId)) return;
    seen.add(e.eventId);
    if (e.paymentIntentId) state.paymentIntentId = e.paymentIntentId;
    switch (e.type) {
      case 'checkout.session.completed':
        if (e.paymentStatus === 'paid' || e.paymentStatus === 'no_payment_required') payment = 'paid';
        else if (payment === 'none') payment = 'pending';
        break;
      case 'checkout.session.async_payment_succeeded':
        payment = 'paid';
        break;
      case 'checkout.session.async_payment_failed':
        if (payment !== 'paid') payment = 'failed';
        break;
      case 'checkout.session.expired':
        sessionExpired = true;
        break;
      case 'payment_intent.payment_failed':
        declined = true;
        declines++;
        break;
    }
  });

  async function setStatus(status: PurchaseStatus, patch: Partial<PurchaseState> = {}): Promise<void> {
    // The record first: once the state says so (and the checkoutReady update answers), the API can read it.
    await acts.recordPurchase(state.purchaseId, { ...patch, status });
    Object.assign(state, patch, { status });
    upsertSearchAttributes([
      { key: PurchaseStatusKey, value: status },
      ...(state.holdExpiresAt ? [{ key: HoldExpiresAtKey, value: new Date(state.holdExpiresAt) }] : []),
    ]);
  }

  /** A paid session whose hold is gone: re-take a unit, or refund at once and tell the buyer why. */
  async function settleLatePayment(): Promise<void> {
    if (!state.paymentIntentId && state.sessionId) {
      state.paymentIntentId = (await acts.getSessionPayment(state.sessionId)).paymentIntentId;
    }
    const retake = await acts.retakeForLatePayment(state.purchaseId);
    if (retake.outcome === 'sold') {
      await setStatus('late_confirmed', {
        paymentIntentId: state.paymentIntentId,
        oversold: retake.oversold,
        reason: 'paid after the hold lapsed; a unit was still free',
      });
      return;
    }
    const reason = 'sold out: the payment arrived after the hold lapsed and no unit was left';
    if (!state.paymentIntentId)
      throw ApplicationFailure.nonRetryable('paid session without a PaymentIntent', 'NoPayment');
    const refund = await stripeActs.refundPayment({
      purchaseId: state.purchaseId,
      paymentIntentId: state.paymentIntentId,
      reason,
      step: 'late',
    });
    await acts.notifyBuyer(
      state.purchaseId,
      state.buyerId,
      'refunded_sold_out',
      `Your payment was refunded. ${reason}.`,
    );
    await setStatus('refunded', {
      paymentIntentId: state.paymentIntentId,
      reason,
      refund: { status: refund.status, reason, refundId: refund.refundId },
    });
  }

  /**
   * The hold is gone and the session was told to expire. A session that was completed a moment
   * earlier still brings a payment (or a delayed one that may fail): wait for it and settle it.
   */
  async function afterSessionClosed(session: SessionState, ended: PurchaseStatus, reason: string): Promise<void> {
    if (session.paymentIntentId) state.paymentIntentId = session.paymentIntentId;
    if (session.status === 'complete') {
      if (session.paymentStatus === 'paid') {
        // Stripe says paid; the webhook may lag, but the money is there either way.
        await condition(() => payment === 'paid', PAID_EVENT_GRACE);
        payment = 'paid';
      } else {
        await condition(() => payment === 'paid' || payment === 'failed', ASYNC_SETTLE_TIMEOUT);
      }
    }
    if (payment === 'paid') return settleLatePayment();
    if (payment === 'failed') return setStatus('payment_failed', { reason: 'the delayed payment failed' });
    if (payment === 'pending') return setStatus('payment_failed', { reason: 'the delayed payment never settled' });
    await setStatus(ended, { reason });
  }

  /**
   * A payment event can land while the saga is finishing (it is then in this run's history, just
   * after the last step): settle it here rather than let the run close over it.
   */
  async function settleStragglers(): Promise<void> {
    for (;;) {
      if (PAID_STATUSES.includes(state.status)) return;
      if (payment === 'paid') return settleLatePayment();
      if (payment !== 'pending' || state.status === 'payment_failed') return;
      if (!(await condition(() => payment !== 'pending', ASYNC_SETTLE_TIMEOUT))) return;
      if ((payment as Payment) === 'failed') return;
    }
  }

  /** Paid, and the hold may still be ours: the hold becomes the sale, else a late payment is settled. */
  async function confirmPaid(): Promise<void> {
    if ((await acts.convertHold(input.purchaseId)) === 'sold') {
      await setStatus('confirmed', { paymentIntentId: state.paymentIntentId, reason: 'paid in time' });
      return;
    }
    // The hold went back to stock a moment before (its expiry passed and a taker reclaimed it).
    await settleLatePayment();
  }

  /** A delayed payment was completed in time: keep the unit until it settles (or fails, or never does). */
  async function holdUntilSettled(): Promise<void> {
    const until = await acts.extendHold(input.purchaseId, ASYNC_SETTLE_SECONDS);
    await setStatus('awaiting_payment', {
      reason: 'a delayed payment is settling; the unit stays held',
      ...(until ? { holdExpiresAt: until } : {}),
    });
    const settled = await condition(() => payment === 'paid' || payment === 'failed', ASYNC_SETTLE_TIMEOUT);
    if (payment === 'paid') return confirmPaid();
    await acts.releaseHold(input.purchaseId, 'release');
    await setStatus('payment_failed', {
      reason: settled ? 'the delayed payment failed' : 'the delayed payment never settled',
    });
  }

  /**
   * v3 end of the wait. Paid: sale. Pending: hold until settled. Otherwise close the session
   * first, and only then give the unit back: a buyer who completed the session a moment earlier
   * still gets it.
   */
  async function finish(sessionId: string): Promise<void> {
    if (payment === 'paid') return confirmPaid();
    if (payment === 'pending') return holdUntilSettled();
    if (payment === 'failed') {
      await acts.releaseHold(input.purchaseId, 'release');
      await setStatus('payment_failed', { reason: 'the delayed payment failed' });
      return settleStragglers();
    }
    const closed: SessionState = sessionExpired
      ? { status: 'expired', paymentStatus: 'unpaid' }
      : await stripeActs.expireCheckout(input.purchaseId, sessionId);
    if (closed.paymentIntentId) state.paymentIntentId = closed.paymentIntentId;
    if (closed.status === 'complete') {
      if (closed.paymentStatus === 'paid' || (payment as Payment) === 'paid') return confirmPaid();
      if ((payment as Payment) === 'none') payment = 'pending';
      return holdUntilSettled();
    }
    const declinedOnly = !cancelRequested && declines > 0;
    await acts.releaseHold(input.purchaseId, cancelRequested || declinedOnly ? 'release' : 'expire');
    const [ended, reason]: [PurchaseStatus, string] = cancelRequested
      ? ['expired', 'cancelled by the buyer']
      : declinedOnly
        ? ['payment_failed', 'the payment was declined and the hold lapsed']
        : ['expired', 'the hold lapsed before payment'];
    await setStatus(ended, { reason });
    await settleStragglers();
  }

  if (input.followUp) return followUp();

  // Registered before the step it undoes: a cancel can land while the step runs. Releasing a hold
  // that was never taken changes nothing.
  const compensations: (() => Promise<unknown>)[] = [() => acts.releaseHold(input.purchaseId, 'release')];
  const compensate = async () => {
    // Last in, first out; each is idempotent, so a retry of the whole list is safe.
    for (const step of [...compensations].reverse()) await step();
  };

  try {
    // --- 1. Hold
    const hold = await acts.takeHold({
      purchaseId: input.purchaseId,
      sku: input.sku,
      buyerId: input.buyerId,
      quantity: input.quantity,
      unitId: input.unitId,
    });
    if (hold.outcome === 'rejected') {
      await setStatus('rejected', { rejection: hold.rejection, reason: hold.rejection.replace(/_/g, ' ') });
      return state;
    }
    Object.assign(state, {
      holdExpiresAt: hold.holdExpiresAt,
      amountCents: hold.amountCents,
      currency: hold.currency,
      oversold: hold.oversold,
    });

    // --- 2. Checkout Session
    let session;
    try {
      session = await checkoutActs.openCheckout({
        purchaseId: input.purchaseId,
        sku: input.sku,
        buyerId: input.buyerId,
        quantity: input.quantity,
        productName: hold.productName,
        amountCents: hold.amountCents,
        currency: hold.currency,
        holdExpiresAt: hold.holdExpiresAt,
        holdSeconds: hold.holdSeconds,
      });
    } catch (err) {
      if (!(err instanceof ActivityFailure)) throw err;
      await compensate();
      await setStatus('failed', {
        reason: `could not open the Checkout Session: ${err.cause?.message ?? err.message}`,
      });
      await settleStragglers();
      return state;
    }
    const sessionId = session.sessionId;
    compensations.push(() => stripeActs.expireCheckout(input.purchaseId, sessionId));
    await setStatus('awaiting_payment', {
      sessionId,
      checkoutUrl: session.url,
      holdExpiresAt: hold.holdExpiresAt,
      amountCents: hold.amountCents,
      currency: hold.currency,
      oversold: hold.oversold,
    });

    // --- 3. Wait for the payment or the hold timer, whichever comes first
    const holdEnd = Date.parse(hold.holdExpiresAt);
    // v2: a declined card no longer ends the purchase; the buyer may try again on the same session
    // until the hold lapses. Sagas started before this change replay the v1 path.
    const retryAfterDecline = patched('retry-after-decline');
    // v3: a delayed payment completed in time keeps the unit until it settles, and a session is
    // expired before its hold is released (so no one pays for a unit already handed on).
    const sessionFirst = retryAfterDecline && patched('session-first-pending-held');
    let lapsed = false;
    let declinesNoted = 0;
    for (;;) {
      const ended = () =>
        payment === 'paid' ||
        payment === 'failed' ||
        (sessionFirst && payment === 'pending') ||
        cancelRequested ||
        sessionExpired;
      const woke = await condition(
        () => ended() || (retryAfterDecline ? declines > declinesNoted : declined),
        Math.max(1, holdEnd - Date.now()),
      );
      if (!woke) {
        lapsed = true;
        break;
      }
      if (!retryAfterDecline || ended()) break;
      declinesNoted = declines;
      await setStatus('awaiting_payment', { reason: 'the last payment attempt was declined; the buyer may try again' });
    }
    const declinedForGood = retryAfterDecline ? lapsed && declines > 0 : declined;
    if (sessionFirst) {
      await finish(sessionId);
      return state;
    }

    if (payment === 'paid') {
      // --- 4a. Paid in time
      if ((await acts.convertHold(input.purchaseId)) === 'sold') {
        await setStatus('confirmed', { paymentIntentId: state.paymentIntentId, reason: 'paid in time' });
        return state;
      }
      // The hold went back to stock a moment before (its expiry passed and a taker reclaimed it).
      await settleLatePayment();
      return state;
    }

    // --- 4b. No payment in time: stock goes back once, then close the session
    await acts.releaseHold(
      input.purchaseId,
      cancelRequested || declinedForGood || payment === 'failed' ? 'release' : 'expire',
    );
    if (payment === 'failed') {
      await setStatus('payment_failed', { reason: 'the delayed payment failed' });
      await settleStragglers();
      return state;
    }
    const closed: SessionState = sessionExpired
      ? { status: 'expired', paymentStatus: 'unpaid' }
      : await stripeActs.expireCheckout(input.purchaseId, sessionId);
    const [ended, reason]: [PurchaseStatus, string] = cancelRequested
      ? ['expired', 'cancelled by the buyer']
      : declinedForGood
        ? [
            'payment_failed',
            retryAfterDecline ? 'the payment was declined and the hold lapsed' : 'the payment was declined',
          ]
        : ['expired', 'the hold lapsed before payment'];
    await afterSessionClosed(closed, ended, reason);
    await settleStragglers();
    return state;
  } catch (err) {
    if (isCancellation(err)) {
      // An operator cancelled the saga: undo what it holds, even though the workflow is cancelled.
      // A payment already made is never dropped: it still ends in a sale or a refund.
      await CancellationScope.nonCancellable(async () => {
        if (!patched('operator-cancel-settles-payment')) {
          await compensate();
          await setStatus('failed', { reason: 'cancelled by an operator' });
          return;
        }
        if (!PAID_STATUSES.includes(state.status) && payment === 'paid') return confirmPaid();
        if (state.sessionId) {
          const closed = await stripeActs.expireCheckout(input.purchaseId, state.sessionId);
          if (closed.paymentIntentId) state.paymentIntentId = closed.paymentIntentId;
          if (closed.status === 'complete' && closed.paymentStatus === 'paid') return confirmPaid();
        }
        if (PAID_STATUSES.includes(state.status)) return;
        await acts.releaseHold(input.purchaseId, 'release');
        await setStatus('failed', { reason: 'cancelled by an operator' });
      });
    }
    throw err;
  }

  /**
   * A payment event for a purchase whose workflow had already closed (started by the webhook with
   * signal-with-start): settle it from the record so no payment is left without an outcome.
   */
  async function followUp(): Promise<PurchaseState> {
    const record = await acts.loadPurchase(input.purchaseId);
    if (!record) return state;
    Object.assign(state, record);
    await condition(() => payment !== 'none' || sessionExpired || declined, '1 minute');
    if (payment === 'pending') await condition(() => payment === 'paid' || payment === 'failed', ASYNC_SETTLE_TIMEOUT);
    const settled = PAID_STATUSES.includes(record.status);
    if (payment === 'paid' && !settled) {
      await settleLatePayment();
    } else if (payment === 'failed' && !FINAL_STATUSES.includes(record.status)) {
      await acts.releaseHold(input.purchaseId, 'release');
      await setStatus('payment_failed', { reason: 'the delayed payment failed' });
    }
    return state;
  }
}
