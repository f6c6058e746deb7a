import type { PurchaseStatus } from '../vocabulary';
import type { SessionState } from '../activities';
import type { PaymentFold } from './payment-fold';

/** What the saga does once the wait for the payment is over (paid, pending, failed, lapsed or cancelled). */
export type EndOfWait =
  /** Paid: the hold becomes the sale. */
  | { step: 'confirm' }
  /** A delayed payment was completed in time: keep the unit until it settles. */
  | { step: 'hold-until-settled' }
  /** The delayed payment failed: give the unit back. */
  | { step: 'payment-failed' }
  /** Nothing paid: close the session first, then see what it says. */
  | { step: 'close-session' };

/** The steps that settle a purchase without closing its session first. */
export type SettleStep = Exclude<EndOfWait, { step: 'close-session' }>;

export function endOfWait(fold: PaymentFold): EndOfWait {
  if (fold.payment === 'paid') return { step: 'confirm' };
  if (fold.payment === 'pending') return { step: 'hold-until-settled' };
  if (fold.payment === 'failed') return { step: 'payment-failed' };
  return { step: 'close-session' };
}

/** What the closed session says: a buyer who completed it a moment earlier still gets the unit. */
export function afterClose(closed: SessionState, fold: PaymentFold): SettleStep | null {
  if (closed.status !== 'complete') return null;
  if (closed.paymentStatus === 'paid' || fold.payment === 'paid') return { step: 'confirm' };
  return { step: 'hold-until-settled' };
}

/** How a purchase ends when no payment came: the ledger kind of the release, the status and the words. */
export function unpaidEnding(
  fold: PaymentFold,
  cancelRequested: boolean,
): { releaseAs: 'release' | 'expire'; status: PurchaseStatus; reason: string } {
  if (cancelRequested) return { releaseAs: 'release', status: 'expired', reason: 'cancelled by the buyer' };
  if (fold.declines > 0) {
    return { releaseAs: 'release', status: 'payment_failed', reason: 'the payment was declined and the hold lapsed' };
  }
  return { releaseAs: 'expire', status: 'expired', reason: 'the hold lapsed before payment' };
}
