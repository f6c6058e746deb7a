import { patched } from '@temporalio/workflow';
import type { SessionState } from '../activities';
import type { PurchaseStatus } from '../vocabulary';
import { acts, stripeActs, type PurchaseSaga } from './saga';

// Paths of sagas started before two rule changes, kept so their histories replay (test/replay):
//   v1 → v2 `retry-after-decline`: a declined card no longer ends the purchase.
//   v2 → v3 `session-first-pending-held`: the session is expired before the hold is released, and a
//           delayed payment completed in time keeps the unit.
//   `operator-cancel-settles-payment`: an operator's cancel no longer drops a payment that arrived.
// They can go (with `deprecatePatch` first) once no saga older than the v3 rule can still be
// running: a saga lives at most its hold plus the 7-day settle window of a delayed payment.

/** v1/v2 end of the wait: stock goes back first, then the session is closed. */
export async function finishBeforeSessionFirst(
  saga: PurchaseSaga,
  sessionId: string,
  opts: { retryAfterDecline: boolean; declinedForGood: boolean },
): Promise<void> {
  const { fold, input } = saga;
  if (saga.payment === 'paid') return saga.confirmPaid();
  await acts.releaseHold(
    input.purchaseId,
    saga.cancelRequested || opts.declinedForGood || saga.payment === 'failed' ? 'release' : 'expire',
  );
  if (saga.payment === 'failed') {
    await saga.setStatus('payment_failed', { reason: 'the delayed payment failed' });
    return saga.settleStragglers();
  }
  const closed: SessionState = fold.sessionExpired
    ? { status: 'expired', paymentStatus: 'unpaid' }
    : await stripeActs.expireCheckout(input.purchaseId, sessionId);
  const [ended, reason]: [PurchaseStatus, string] = saga.cancelRequested
    ? ['expired', 'cancelled by the buyer']
    : opts.declinedForGood
      ? [
          'payment_failed',
          opts.retryAfterDecline ? 'the payment was declined and the hold lapsed' : 'the payment was declined',
        ]
      : ['expired', 'the hold lapsed before payment'];
  await saga.afterSessionClosed(closed, ended, reason);
  await saga.settleStragglers();
}

/** Before `operator-cancel-settles-payment`: an operator's cancel ran the compensations and failed the purchase. */
export function cancelsWithoutSettling(): boolean {
  return !patched('operator-cancel-settles-payment');
}
