import {
  ApplicationFailure,
  condition,
  proxyActivities,
  proxyLocalActivities,
  upsertSearchAttributes,
} from '@temporalio/workflow';
import { isPaid, type PurchaseInput, type PurchaseState, type PurchaseStatus } from '../vocabulary';
import type { Activities, SessionState } from '../activities';
import { HoldExpiresAtKey, PurchaseStatusKey } from './definitions';
import { afterClose, endOfWait, unpaidEnding, type SettleStep } from './end-of-wait';
import { PaymentFold, type Payment } from './payment-fold';

// Postgres and bookkeeping steps: retried until they succeed (transient faults heal; a fault that
// does not heal shows up in the Temporal UI as a pending activity with its last failure).
export const acts = proxyActivities<Activities>({
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
export const checkoutActs = proxyActivities<Activities>({
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
export const stripeActs = proxyActivities<Activities>({
  startToCloseTimeout: '20 seconds',
  retry: { initialInterval: '500 milliseconds', backoffCoefficient: 2, maximumInterval: '1 minute' },
});

/** How long a session that was completed with a delayed payment method may take to settle. */
export const ASYNC_SETTLE_TIMEOUT = '7 days';
const ASYNC_SETTLE_SECONDS = 7 * 24 * 3600;
/** How long to wait for the webhook of a session Stripe already reports paid, before reading it ourselves. */
const PAID_EVENT_GRACE = '1 minute';

/**
 * The state of one purchase saga and the steps that settle it once the hold is taken. Shared by the
 * first run (purchase.ts), the follow-up run (follow-up.ts) and the paths of sagas started before
 * the session-first rule (legacy.ts). Every step writes the record before the in-memory state, so
 * whatever the API reads from a query or update is already durable.
 */
export class PurchaseSaga {
  readonly state: PurchaseState;
  readonly fold = new PaymentFold();
  cancelRequested = false;

  constructor(readonly input: PurchaseInput) {
    this.state = {
      purchaseId: input.purchaseId,
      sku: input.sku,
      buyerId: input.buyerId,
      quantity: input.quantity,
      status: 'holding',
    };
  }

  get payment(): Payment {
    return this.fold.payment;
  }

  async setStatus(status: PurchaseStatus, patch: Partial<PurchaseState> = {}): Promise<void> {
    // The record first: once the state says so (and the checkoutReady update answers), the API can read it.
    await acts.recordPurchase(this.state.purchaseId, { ...patch, status });
    this.markStatus(status, patch);
  }

  /** The state and search attributes only, for a step whose activity already wrote the record. */
  markStatus(status: PurchaseStatus, patch: Partial<PurchaseState> = {}): void {
    Object.assign(this.state, patch, { status });
    upsertSearchAttributes([
      { key: PurchaseStatusKey, value: status },
      ...(this.state.holdExpiresAt ? [{ key: HoldExpiresAtKey, value: new Date(this.state.holdExpiresAt) }] : []),
    ]);
  }

  /** A paid session whose hold is gone: re-take a unit, or refund at once and tell the buyer why. */
  async settleLatePayment(): Promise<void> {
    const { state } = this;
    if (!state.paymentIntentId && state.sessionId) {
      state.paymentIntentId = (await acts.getSessionPayment(state.sessionId)).paymentIntentId;
    }
    const retake = await acts.retakeForLatePayment(state.purchaseId);
    if (retake.outcome === 'sold') {
      await this.setStatus('late_confirmed', {
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
    await this.setStatus('refunded', {
      paymentIntentId: state.paymentIntentId,
      reason,
      refund: { status: refund.status, reason, refundId: refund.refundId },
    });
  }

  /** Paid, and the hold may still be ours: the hold becomes the sale, else a late payment is settled. */
  async confirmPaid(): Promise<void> {
    if ((await acts.convertHold(this.input.purchaseId)) === 'sold') {
      await this.setStatus('confirmed', { paymentIntentId: this.state.paymentIntentId, reason: 'paid in time' });
      return;
    }
    // The hold went back to stock a moment before (its expiry passed and a taker reclaimed it).
    await this.settleLatePayment();
  }

  /** A delayed payment was completed in time: keep the unit until it settles (or fails, or never does). */
  async holdUntilSettled(): Promise<void> {
    const until = await acts.extendHold(this.input.purchaseId, ASYNC_SETTLE_SECONDS);
    await this.setStatus('awaiting_payment', {
      reason: 'a delayed payment is settling; the unit stays held',
      ...(until ? { holdExpiresAt: until } : {}),
    });
    const settled = await condition(() => this.fold.settled, ASYNC_SETTLE_TIMEOUT);
    if (this.payment === 'paid') return this.confirmPaid();
    await acts.releaseHold(this.input.purchaseId, 'release');
    await this.setStatus('payment_failed', {
      reason: settled ? 'the delayed payment failed' : 'the delayed payment never settled',
    });
  }

  /**
   * A payment event can land while the saga is finishing (it is then in this run's history, just
   * after the last step): settle it here rather than let the run close over it.
   */
  async settleStragglers(): Promise<void> {
    for (;;) {
      if (isPaid(this.state.status)) return;
      if (this.payment === 'paid') return this.settleLatePayment();
      if (this.payment !== 'pending' || this.state.status === 'payment_failed') return;
      if (!(await condition(() => this.payment !== 'pending', ASYNC_SETTLE_TIMEOUT))) return;
      if ((this.payment as Payment) === 'failed') return;
    }
  }

  /** The wait is over (session-first sagas): act on what the payment events and the session say. */
  async finish(sessionId: string): Promise<void> {
    const next = endOfWait(this.fold);
    if (next.step !== 'close-session') return this.take(next);
    const closed: SessionState = this.fold.sessionExpired
      ? { status: 'expired', paymentStatus: 'unpaid' }
      : await stripeActs.expireCheckout(this.input.purchaseId, sessionId);
    if (closed.paymentIntentId) this.state.paymentIntentId = closed.paymentIntentId;
    const completed = afterClose(closed, this.fold);
    if (completed) {
      if (completed.step === 'hold-until-settled' && this.payment === 'none') this.fold.payment = 'pending';
      return this.take(completed);
    }
    const ending = unpaidEnding(this.fold, this.cancelRequested);
    await acts.releaseHold(this.input.purchaseId, ending.releaseAs);
    await this.setStatus(ending.status, { reason: ending.reason });
    await this.settleStragglers();
  }

  private async take(next: SettleStep): Promise<void> {
    switch (next.step) {
      case 'confirm':
        return this.confirmPaid();
      case 'hold-until-settled':
        return this.holdUntilSettled();
      case 'payment-failed':
        await acts.releaseHold(this.input.purchaseId, 'release');
        await this.setStatus('payment_failed', { reason: 'the delayed payment failed' });
        return this.settleStragglers();
    }
  }

  /**
   * The hold is gone and the session was told to expire (sagas started before the session-first
   * rule). A session completed a moment earlier still brings a payment: wait for it and settle it.
   */
  async afterSessionClosed(session: SessionState, ended: PurchaseStatus, reason: string): Promise<void> {
    if (session.paymentIntentId) this.state.paymentIntentId = session.paymentIntentId;
    if (session.status === 'complete') {
      if (session.paymentStatus === 'paid') {
        // Stripe says paid; the webhook may lag, but the money is there either way.
        await condition(() => this.payment === 'paid', PAID_EVENT_GRACE);
        this.fold.payment = 'paid';
      } else {
        await condition(() => this.fold.settled, ASYNC_SETTLE_TIMEOUT);
      }
    }
    if (this.payment === 'paid') return this.settleLatePayment();
    if (this.payment === 'failed') return this.setStatus('payment_failed', { reason: 'the delayed payment failed' });
    if (this.payment === 'pending')
      return this.setStatus('payment_failed', { reason: 'the delayed payment never settled' });
    await this.setStatus(ended, { reason });
  }
}
