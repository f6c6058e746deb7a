import {
  ActivityFailure,
  CancellationScope,
  condition,
  isCancellation,
  log,
  patched,
  setHandler,
  TemporalFailure,
} from '@temporalio/workflow';
import {
  foreignEventReason,
  isFinal,
  isPaid,
  paidBy,
  type PaymentEvent,
  type PurchaseInput,
  type PurchaseState,
} from '../vocabulary';
import { cancelUpdate, checkoutReadyUpdate, paymentEventSignal, purchaseStateQuery } from './definitions';
import type { SessionState } from '../activities';
import { followUp } from './follow-up';
import { cancelsWithoutSettling, finishBeforeSessionFirst } from './legacy';
import { acts, checkoutActs, localActs, localCheckoutActs, PurchaseSaga, stripeActs } from './saga';

/** Expires the session a failed session step may have opened after all; gives up (logged) if Stripe keeps failing. */
async function closeUnansweredCheckout(checkout: Parameters<typeof checkoutActs.closeUnansweredCheckout>[0]) {
  try {
    const found = await checkoutActs.closeUnansweredCheckout(checkout);
    if (found)
      log.warn('closed a Checkout Session a failed attempt had opened', { purchaseId: checkout.purchaseId, ...found });
  } catch (err) {
    if (isCancellation(err)) throw err;
    log.error('could not close the Checkout Session a failed attempt may have opened', {
      purchaseId: checkout.purchaseId,
      error: (err as Error).message,
    });
  }
}

/**
 * One purchase, from hold to outcome. Takes the hold (compensation: release), opens the Checkout
 * Session (compensation: expire), then waits for a payment event or the hold timer. Paid in time:
 * the hold becomes a sale. Hold lapsed: the session is expired, stock goes back once, and a payment
 * that still arrives re-takes a unit or is refunded at once. Workflow id: `purchase-<purchaseId>`.
 * A run started by a payment for a closed saga (`followUp`) only settles that payment.
 */
export async function purchaseWorkflow(input: PurchaseInput): Promise<PurchaseState> {
  const saga = new PurchaseSaga(input);
  const { state, fold } = saga;

  setHandler(purchaseStateQuery, () => state);
  setHandler(checkoutReadyUpdate, async () => {
    await condition(() => state.status !== 'holding');
    return state;
  });
  setHandler(cancelUpdate, async () => {
    saga.cancelRequested = true;
    // Answered once the hold is given back, or once money is known to be on its way (then the cancel cannot win).
    await condition(() => isFinal(state.status) || saga.payment !== 'none');
    return state;
  });
  setHandler(paymentEventSignal, (e: PaymentEvent) => {
    // The webhook refuses events that are not this purchase's own; one that reaches the saga some
    // other way is ignored too (a follow-up run checks once its record is loaded).
    if (state.sessionId && foreignEventReason(e, state, e.livemode ?? false)) return;
    const wasPaid = fold.payment === 'paid';
    if (!fold.apply(e)) return;
    if (e.paymentIntentId) state.paymentIntentId = e.paymentIntentId;
    if (!wasPaid && fold.payment === 'paid') saga.paidAt = paidBy(e) ?? Date.now();
  });

  log.info(input.followUp ? 'purchase follow-up started' : 'purchase saga started', {
    purchaseId: input.purchaseId,
    sku: input.sku,
    quantity: input.quantity,
  });
  if (input.followUp) return followUp(saga);

  // Registered before the step it undoes: a cancel can land while the step runs. Releasing a hold
  // that was never taken changes nothing.
  const compensations: (() => Promise<unknown>)[] = [() => acts.releaseHold(input.purchaseId, 'release')];
  const compensate = async () => {
    // Last in, first out; each is idempotent, so a retry of the whole list is safe.
    for (const step of [...compensations].reverse()) await step();
  };

  try {
    // v4: the hold is a local activity and opening the session writes the record, so a purchase
    // reaches its checkout URL in two workflow tasks and one activity task.
    const lean = patched('local-hold-checkout-records');
    // v6: the session is a local activity as well: the checkout URL in one workflow task, no activity task.
    const sessionInTask = lean && patched('checkout-in-first-task');
    // 1. The hold
    const hold = await (lean ? localActs : acts).takeHold({
      purchaseId: input.purchaseId,
      sku: input.sku,
      buyerId: input.buyerId,
      quantity: input.quantity,
      unitId: input.unitId,
      terms: input.terms,
    });
    if (hold.outcome === 'rejected') {
      await saga.setStatus('rejected', {
        rejection: hold.rejection,
        reason: hold.rejection.replace(/_/g, ' '),
        ...(hold.heldBy ? { heldBy: hold.heldBy } : {}),
      });
      return state;
    }
    Object.assign(state, {
      holdExpiresAt: hold.holdExpiresAt,
      amountCents: hold.amountCents,
      currency: hold.currency,
      oversold: hold.oversold,
    });

    // 2. The Checkout Session
    const checkoutInput = {
      purchaseId: input.purchaseId,
      sku: input.sku,
      buyerId: input.buyerId,
      quantity: input.quantity,
      productName: hold.productName,
      unitAmountCents: hold.unitAmountCents,
      currency: hold.currency,
      holdExpiresAt: hold.holdExpiresAt,
      holdSeconds: hold.holdSeconds,
    };
    let session;
    try {
      session = await (sessionInTask ? localCheckoutActs : checkoutActs).openCheckout({
        ...checkoutInput,
        ...(lean
          ? { record: { amountCents: hold.amountCents, currency: hold.currency, oversold: hold.oversold } }
          : {}),
      });
    } catch (err) {
      // A local activity's last failure arrives as itself (its ApplicationFailure or TimeoutFailure),
      // an activity's wrapped in an ActivityFailure.
      if (!(err instanceof TemporalFailure) || isCancellation(err)) throw err;
      const cause = err instanceof ActivityFailure ? (err.cause ?? err) : err;
      await compensate();
      await saga.setStatus('failed', { reason: `could not open the Checkout Session: ${cause.message}` });
      // v7: an attempt whose answer was lost may have opened the session anyway: close it, so no one
      // pays for a purchase that failed. The purchase never recorded that session, so a payment that
      // beat this is foreign to it and refunded as a stray payment.
      if (patched('close-unanswered-checkout')) await closeUnansweredCheckout(checkoutInput);
      await saga.settleStragglers();
      return state;
    }
    const sessionId = session.sessionId;
    compensations.push(() => stripeActs.expireCheckout(input.purchaseId, sessionId));
    const opened = {
      sessionId,
      checkoutUrl: session.url,
      holdExpiresAt: hold.holdExpiresAt,
      amountCents: hold.amountCents,
      currency: hold.currency,
      oversold: hold.oversold,
    };
    if (lean) saga.markStatus('awaiting_payment', opened);
    else await saga.setStatus('awaiting_payment', opened);

    // 3. Wait for the payment or the hold timer, whichever comes first
    const holdEnd = Date.parse(hold.holdExpiresAt);
    // v2: a declined card no longer ends the purchase; the buyer may try again until the hold lapses.
    const retryAfterDecline = patched('retry-after-decline');
    // v3: a delayed payment completed in time keeps the unit, and the session is expired before the hold is released.
    const sessionFirst = retryAfterDecline && patched('session-first-pending-held');
    let lapsed = false;
    let declinesNoted = 0;
    for (;;) {
      const ended = () =>
        fold.settled || (sessionFirst && saga.payment === 'pending') || saga.cancelRequested || fold.sessionExpired;
      const woke = await condition(
        () => ended() || (retryAfterDecline ? fold.declines > declinesNoted : fold.declined),
        Math.max(1, holdEnd - Date.now()),
      );
      if (!woke) {
        lapsed = true;
        break;
      }
      if (!retryAfterDecline || ended()) break;
      declinesNoted = fold.declines;
      await saga.setStatus('awaiting_payment', {
        reason: 'the last payment attempt was declined; the buyer may try again',
      });
    }

    // 4. Settle: a sale, a hold-until-settled, or the hold back to stock with the session closed
    if (sessionFirst) await saga.finish(sessionId);
    else {
      const declinedForGood = retryAfterDecline ? lapsed && fold.declines > 0 : fold.declined;
      await finishBeforeSessionFirst(saga, sessionId, { retryAfterDecline, declinedForGood });
    }
    return state;
  } catch (err) {
    if (isCancellation(err)) {
      // An operator cancelled the saga: undo what it holds, even though the workflow is cancelled.
      // A payment already made is never dropped: it still ends in a sale or a refund.
      await CancellationScope.nonCancellable(async () => {
        if (cancelsWithoutSettling()) {
          await compensate();
          await saga.setStatus('failed', { reason: 'cancelled by an operator' });
          return;
        }
        if (!isPaid(state.status) && saga.payment === 'paid') return saga.confirmPaid();
        if (state.sessionId) {
          const sessionId = state.sessionId;
          const answer = await saga.attend('expiring the Checkout Session', () =>
            stripeActs.expireCheckout(input.purchaseId, sessionId),
          );
          const closed: SessionState =
            answer.outcome === 'done' ? answer.value : { status: 'expired', paymentStatus: 'unpaid' };
          if (closed.paymentIntentId) state.paymentIntentId = closed.paymentIntentId;
          if (closed.status === 'complete' && closed.paymentStatus === 'paid') return saga.confirmPaid();
        }
        if (isPaid(state.status)) return;
        await acts.releaseHold(input.purchaseId, 'release');
        await saga.setStatus('failed', { reason: 'cancelled by an operator' });
      });
    }
    throw err;
  }
}
