import { condition, patched } from '@temporalio/workflow';
import { isFinal, isPaid, type PurchaseState } from '../vocabulary';
import { acts } from './proxies';
import { DURATIONS } from './durations';
import { READ_UNSETTLED_PATCH } from './end-of-wait';
import type { PurchaseSaga } from './saga';

/**
 * A payment event for a purchase whose workflow had already closed (the webhook started this run
 * with signal-with-start): settle it from the record so no payment is left without an outcome.
 */
export async function followUp(saga: PurchaseSaga): Promise<PurchaseState> {
  const { state, fold } = saga;
  const record = await acts.loadPurchase(saga.input.purchaseId);
  if (!record) return state;
  Object.assign(state, record);
  saga.recordLoaded();
  await condition(() => saga.payment !== 'none' || fold.sessionExpired || fold.declines > 0, DURATIONS.followUpEventMs);
  // A delayed payment's first word arriving after its outcome (out of order): nothing left to settle.
  if (saga.payment === 'pending' && !isPaid(record.status)) {
    const settled = await condition(() => fold.settled, DURATIONS.asyncSettleMs);
    if (!settled && patched(READ_UNSETTLED_PATCH)) await saga.readAfterTheEnd();
  }
  if (saga.payment === 'paid' && !isPaid(record.status)) {
    await saga.settleLatePayment();
  } else if (saga.payment === 'failed' && !isFinal(record.status)) {
    await saga.endReleased('release', 'payment_failed', { reason: 'the delayed payment failed' });
  }
  return state;
}
