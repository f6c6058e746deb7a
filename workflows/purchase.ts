import {
  ActivityFailure,
  CancellationScope,
  condition,
  isCancellation,
  log,
  patched,
  setHandler,
  setWorkflowOptions,
  workflowInfo,
} from '@temporalio/workflow';
import { isFinal, isPaid, type PurchaseInput, type PurchaseState } from '../vocabulary';
import type { OpenCheckoutInput, SessionState, TakeHoldOutput } from '../activities';
import { cancelUpdate, holdAnsweredUpdate, paymentEventSignal, purchaseStateQuery } from './definitions';
import { settle, settleStragglers } from './end-of-wait';
import { followUp } from './follow-up';
import { checkoutActs, localActs, stripeActs } from './proxies';
import { PurchaseSaga } from './saga';
import { refundPaid } from './saga-refund';

type Hold = Extract<TakeHoldOutput, { outcome: 'held' }>;

/**
 * One purchase, from hold to outcome. Workflow id `purchase-<purchaseId>`, so a retried start joins
 * the running saga. Side effects: a stock hold (keyed by the purchase id; compensation: release it),
 * a Checkout Session (key `checkout-<purchaseId>`; compensation: expire it), then the sale, or for a
 * payment after the hold went back, a re-take or a refund (key `refund-late-<purchaseId>`). Every
 * status is written to the purchase record first. A run started by a payment for a closed saga
 * (`input.followUp`) only settles that payment. An operator's cancel expires the session and
 * releases the hold, but a payment already made still ends in a sale or a refund.
 */
export async function purchaseWorkflow(input: PurchaseInput): Promise<PurchaseState> {
  const saga = new PurchaseSaga(input);
  listen(saga);
  log.info(input.followUp ? 'purchase follow-up started' : 'purchase saga started', {
    purchaseId: input.purchaseId,
    sku: input.sku,
    quantity: input.quantity,
  });
  if (input.followUp) return followUp(saga);

  try {
    const hold = await takeHold(saga);
    if (!hold) return saga.state;
    const sessionId = await openSession(saga, hold);
    if (!sessionId) return saga.state;
    await waitForPaymentOrLapse(saga, Date.parse(hold.holdExpiresAt));
    // Confirm; keep the unit while a delayed payment settles; or expire the session and release the
    // hold, and re-take a unit for (or refund) a payment that arrives after all.
    await settle(saga, sessionId);
    return saga.state;
  } catch (err) {
    // Compensations run even though the workflow is cancelled, hence the non-cancellable scope.
    if (isCancellation(err)) await CancellationScope.nonCancellable(() => compensateOperatorCancel(saga));
    throw err;
  }
}

// With Worker Versioning (WORKER_DEPLOYMENT_NAME), a saga runs to its end on the version it started on:
// a deploy never meets a running saga's history, and the old version drains as its sagas end (most
// within their hold; one waiting for a bank debit up to 7 days). Without it, `patched()` as before
// (an unversioned worker may name no behaviour: the server refuses the task).
setWorkflowOptions(() => {
  const versioned = workflowInfo().currentDeploymentVersion?.deploymentName;
  /* istanbul ignore if -- the fast tier's workers are unversioned; a versioned one: test/worker/versioning.test.ts */
  if (versioned) return { versioningBehavior: 'PINNED' };
  return {};
}, purchaseWorkflow);

/** The query, the two updates and the payment events; registered before the first step, which they may overtake. */
function listen(saga: PurchaseSaga): void {
  const { state } = saga;
  setHandler(purchaseStateQuery, () => state);
  // The API's first wait: the answer goes out with the first workflow task, before the session's turn
  // on the Stripe queue; the session step writes the checkout URL to the record, where the API waits.
  setHandler(holdAnsweredUpdate, async () => {
    await condition(() => saga.holdAnswered || state.status !== 'holding');
    return state;
  });
  setHandler(cancelUpdate, async () => {
    saga.cancelRequested = true;
    // Answered once the hold is given back, or once money is known to be on its way (then the cancel cannot win).
    await condition(() => isFinal(state.status) || saga.payment !== 'none');
    return state;
  });
  setHandler(paymentEventSignal, (e) => saga.hear(e));
}

/** 1. The hold, a local activity in the saga's first workflow task (the hold desk batches it with others). Null: refused. */
async function takeHold(saga: PurchaseSaga): Promise<Hold | null> {
  const { purchaseId, sku, buyerId, quantity, unitId, terms } = saga.input;
  const hold = await localActs.takeHold({ purchaseId, sku, buyerId, quantity, unitId, terms });
  if (hold.outcome === 'rejected') {
    const rejected = {
      rejection: hold.rejection,
      reason: hold.rejection.replace(/_/g, ' '),
      ...(hold.heldBy ? { heldBy: hold.heldBy } : {}),
    };
    // The run ends here: nothing follows a refused hold (no session, so no payment).
    await saga.setStatus('rejected', rejected, { runEnds: true });
    return null;
  }
  Object.assign(saga.state, {
    holdExpiresAt: hold.holdExpiresAt,
    amountCents: hold.amountCents,
    currency: hold.currency,
    oversold: hold.oversold,
  });
  saga.holdAnswered = true;
  return hold;
}

/**
 * 2. The Checkout Session, opened on the Stripe queue when the budget gives it a turn (new checkouts
 * go after money already in play), for as long as the hold lasts. It expires with the hold (or at
 * Stripe's 30-minute minimum, and the saga expires it at the lapse), chosen when it is created. The
 * activity writes `awaiting_payment` to the record itself, so the checkout URL is readable at once.
 * Null: it could not open, the hold was released.
 */
async function openSession(saga: PurchaseSaga, hold: Hold): Promise<string | null> {
  const { purchaseId, sku, buyerId, quantity } = saga.input;
  const order: OpenCheckoutInput = {
    purchaseId,
    sku,
    buyerId,
    quantity,
    productName: hold.productName,
    unitAmountCents: hold.unitAmountCents,
    currency: hold.currency,
    holdExpiresAt: hold.holdExpiresAt,
    holdSeconds: hold.holdSeconds,
    ...(hold.shippingCountries ? { shippingCountries: hold.shippingCountries } : {}),
    ...(hold.paymentMethodTypes ? { paymentMethodTypes: hold.paymentMethodTypes } : {}),
  };
  const opened = { amountCents: hold.amountCents, currency: hold.currency, oversold: hold.oversold };
  const heedsCancel = patched(BUYER_CANCEL_BEFORE_SESSION_PATCH);
  if (heedsCancel && saga.cancelRequested) return endCancelledBeforeSession(saga);
  try {
    const open = () => checkoutActs(Date.parse(hold.holdExpiresAt)).openCheckout({ ...order, record: opened });
    const session = heedsCancel ? await unlessBuyerCancels(saga, open) : await open();
    saga.markStatus('awaiting_payment', {
      ...opened,
      sessionId: session.sessionId,
      checkoutUrl: session.url,
      holdExpiresAt: hold.holdExpiresAt,
    });
    return session.sessionId;
  } catch (err) {
    const operatorCancelled = CancellationScope.current().consideredCancelled;
    if (heedsCancel && isCancellation(err) && saga.cancelRequested && !operatorCancelled)
      return endCancelledBeforeSession(saga, order);
    // Only the step's own failure is compensated here; a cancellation is the operator's (below).
    if (isCancellation(err) || !(err instanceof ActivityFailure)) throw err;
    // Its turn (or Stripe) did not come before the hold's end: the step's schedule-to-close.
    const lapsed = err.retryState === 'TIMEOUT';
    const reason = lapsed
      ? 'the hold lapsed before the Checkout Session could open'
      : (err.cause ?? /* istanbul ignore next -- Temporal gives every activity failure its cause */ err).message;
    await saga.endReleased('release', 'failed', { reason: `could not open the Checkout Session: ${reason}` });
    // An attempt whose answer was lost may have opened the session anyway: close it, so no one pays
    // for a purchase that failed. The purchase never recorded that session, so a payment that beat
    // this is foreign to it and refunded as a stray payment.
    await closeUnansweredCheckout(order);
    await settleStragglers(saga);
    return null;
  }
}

/**
 * A buyer's cancel before the session opened used to wait for the session's turn in the Stripe
 * budget (the unit held meanwhile, the cancel answered `holding` after 5 s), open it, then expire it.
 * Under this patch the step waiting for its turn is cancelled and the unit goes back at once.
 */
const BUYER_CANCEL_BEFORE_SESSION_PATCH = 'buyer-cancel-before-session';

/** Runs the session step in a scope of its own, cancelled when the buyer cancels before it answers. */
async function unlessBuyerCancels<T>(saga: PurchaseSaga, step: () => Promise<T>): Promise<T> {
  const scope = new CancellationScope();
  let answered = false;
  // Rejected only when the whole saga is cancelled (the operator), which cancels the step anyway.
  void condition(() => answered || saga.cancelRequested).then(
    () => answered || scope.cancel(),
    () => undefined,
  );
  try {
    return await scope.run(step);
  } finally {
    answered = true;
  }
}

/**
 * The buyer cancelled before the session opened: the unit goes back. Once the session step was asked
 * for (`order`), a session an attempt may have opened is closed: none did while the step waited for
 * its turn, and then nothing is sent to Stripe. An attempt still calling Stripe cannot reopen the
 * purchase (its record write is only over `holding`), and the close sends its request again under the
 * same key, so it finds that attempt's session.
 */
async function endCancelledBeforeSession(saga: PurchaseSaga, order?: OpenCheckoutInput): Promise<null> {
  await saga.endReleased('release', 'expired', { reason: 'cancelled by the buyer before the checkout opened' });
  if (order) await closeUnansweredCheckout(order);
  await settleStragglers(saga);
  return null;
}

/** Expires the session a failed session step may have opened after all; gives up (logged) if Stripe keeps failing. */
async function closeUnansweredCheckout(order: OpenCheckoutInput): Promise<void> {
  try {
    const found = await stripeActs().closeUnansweredCheckout(order);
    if (found)
      log.warn('closed a Checkout Session a failed attempt had opened', { purchaseId: order.purchaseId, ...found });
  } catch (err) {
    if (isCancellation(err)) throw err;
    log.error('could not close the Checkout Session a failed attempt may have opened', {
      purchaseId: order.purchaseId,
      error: (err as Error).message,
    });
  }
}

/**
 * 3. Waits for the payment, the buyer's cancel or the hold timer, whichever comes first. A declined
 * card keeps the hold: the buyer may try again on the same session until it lapses.
 */
async function waitForPaymentOrLapse(saga: PurchaseSaga, holdEnd: number): Promise<void> {
  const { fold } = saga;
  const over = () => saga.payment !== 'none' || saga.cancelRequested || fold.sessionExpired;
  for (let declinesSeen = 0; ;) {
    const woke = await condition(() => over() || fold.declines > declinesSeen, Math.max(1, holdEnd - Date.now()));
    if (!woke || over()) return;
    // Counted before the write: a decline that lands while it runs is told to the buyer too.
    declinesSeen = fold.declines;
    await saga.setStatus('awaiting_payment', {
      reason: 'the last payment attempt was declined; the buyer may try again',
    });
  }
}

/**
 * The operator's cancel stops expiring the session when Stripe says it expired (or a payment arrives),
 * as the close at the lapse does: a cancel of a saga stuck behind a failing expire used to re-run the
 * same call until Stripe answered it. Sagas cancelled before it keep their histories.
 */
const CANCEL_HEARS_STRIPE_PATCH = 'cancel-hears-the-session';

/**
 * A payment event that landed while an operator's cancel gave the unit back (a delayed payment's
 * success, or a completed session's news that came after the expire's answer) was in the run's
 * history and left unsettled as the run closed: the webhook had handed it over, so no follow-up ran.
 * Under this patch it is settled as after every other release.
 */
const OPERATOR_CANCEL_SETTLES_PATCH = 'operator-cancel-settles-stragglers';

/**
 * An operator's cancel of a saga that was refunding a payment it could not keep (a late payment with
 * no unit, a payment the rules refuse) confirmed that payment again when Stripe's answer to the
 * expire (or the record's `needs_attention`) said it was paid: a unit sold to a buyer whose money
 * was on its way back. Under this patch the cancel finishes the refund instead.
 */
const CANCEL_KEEPS_REFUND_PATCH = 'cancel-keeps-the-refund';

/**
 * The cancel of a saga that had started a refund: once Stripe made it (it has an id on the record,
 * with the payment), the webhook records the rest and support's word reaches a run that makes it
 * again; before that (cut short, or refused), the refund is made now (the same idempotency key as the
 * call the cancel cut short: never twice), and followed as before.
 */
async function keepRefund(saga: PurchaseSaga, refund: { reason: string; kind: string }): Promise<void> {
  if (saga.state.refund?.refundId) return;
  await refundPaid(saga, refund.reason, refund.kind);
}

/**
 * An operator cancelled the saga: expire the session, then release the hold, last in first out. A
 * payment already made is never dropped: it still ends in a sale (or a refund, when its unit is gone).
 */
async function compensateOperatorCancel(saga: PurchaseSaga): Promise<void> {
  const { state, input, fold } = saga;
  if (saga.refunding && patched(CANCEL_KEEPS_REFUND_PATCH)) return keepRefund(saga, saga.refunding);
  if (!isPaid(state.status) && saga.payment === 'paid') return saga.confirmPaid();
  if (state.sessionId) {
    const sessionId = state.sessionId;
    // As the close at the lapse: Stripe's word that the session expired, or a payment, ends the call.
    const hears = patched(CANCEL_HEARS_STRIPE_PATCH);
    const paidBefore = fold.payment === 'paid';
    const answer = await saga.attend(
      'expiring the Checkout Session',
      () => stripeActs().expireCheckout(input.purchaseId, sessionId),
      hears ? () => fold.sessionExpired || (!paidBefore && fold.payment === 'paid') : undefined,
      hears,
    );
    const closed: SessionState =
      answer.outcome === 'done' ? answer.value : { status: 'expired', paymentStatus: 'unpaid' };
    if (closed.paymentIntentId) state.paymentIntentId = closed.paymentIntentId;
    if (closed.status === 'complete' && closed.paymentStatus === 'paid') return saga.confirmPaid();
    if (hears && !isPaid(state.status) && fold.payment === 'paid') return saga.confirmPaid();
  }
  if (isPaid(state.status)) return;
  await saga.endReleased('release', 'failed', { reason: 'cancelled by an operator' });
  /* istanbul ignore else -- only the replay of a history from before the patch takes the other path */
  if (patched(OPERATOR_CANCEL_SETTLES_PATCH)) await settleStragglers(saga);
}
