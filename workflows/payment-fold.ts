import type { PaymentEvent } from '../vocabulary';

/** Where the money of one purchase stands, as far as Stripe's events have told. */
export type Payment = 'none' | 'pending' | 'paid' | 'failed';

/**
 * Folds a purchase's payment events into one monotonic view. Redelivered events (same id) count
 * once, and out-of-order ones cannot move it backwards: paid or failed wins over pending, paid
 * wins over failed. Pure: the workflow feeds it signals and reads it in its conditions.
 */
export class PaymentFold {
  payment: Payment = 'none';
  /** Declined attempts: each one lets the buyer try again on the same session until the hold lapses. */
  declines = 0;
  sessionExpired = false;
  private readonly seen = new Set<string>();

  /** Applies one event; false when it was seen before. */
  apply(e: PaymentEvent): boolean {
    if (this.seen.has(e.eventId)) return false;
    this.seen.add(e.eventId);
    switch (e.type) {
      case 'checkout.session.completed':
        if (e.paymentStatus === 'paid' || e.paymentStatus === 'no_payment_required') this.payment = 'paid';
        else if (this.payment === 'none') this.payment = 'pending';
        break;
      case 'checkout.session.async_payment_succeeded':
        this.payment = 'paid';
        break;
      case 'checkout.session.async_payment_failed':
        if (this.payment !== 'paid') this.payment = 'failed';
        break;
      case 'checkout.session.expired':
        this.sessionExpired = true;
        break;
      case 'payment_intent.payment_failed':
        this.declines++;
        break;
    }
    return true;
  }

  /** Money arrived or settled one way or the other. */
  get settled(): boolean {
    return this.payment === 'paid' || this.payment === 'failed';
  }
}
