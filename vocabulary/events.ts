// The Stripe events the sagas act on, reduced to what they need, and the check that an event is a
// purchase's own. Part of the vocabulary (vocabulary/index.ts re-exports it); it imports nothing.

/** The Stripe events the purchase saga acts on. */
export const PAYMENT_EVENT_TYPES = [
  'checkout.session.completed',
  'checkout.session.async_payment_succeeded',
  'checkout.session.async_payment_failed',
  'checkout.session.expired',
  'payment_intent.payment_failed',
] as const;
export type PaymentEventType = (typeof PAYMENT_EVENT_TYPES)[number];

/** Events that bring no money: they cannot change a purchase that already has its outcome. */
export const NO_PAYMENT_EVENT_TYPES = [
  'checkout.session.expired',
  'payment_intent.payment_failed',
  'checkout.session.async_payment_failed',
] as const satisfies readonly PaymentEventType[];

export function isPaymentEventType(type: string): type is PaymentEventType {
  return (PAYMENT_EVENT_TYPES as readonly string[]).includes(type);
}
export function bringsNoPayment(type: PaymentEventType): boolean {
  return (NO_PAYMENT_EVENT_TYPES as readonly string[]).includes(type);
}

/** What Stripe told us, reduced to what the saga needs. `eventId` dedupes redeliveries. */
export interface PaymentEvent {
  eventId: string;
  type: PaymentEventType;
  sessionId?: string;
  paymentIntentId?: string;
  /** For checkout.session.*: the session's payment_status (`paid`, `unpaid`, `no_payment_required`). */
  paymentStatus?: string;
  /** The session's `amount_total` or the PaymentIntent's `amount`, in the smallest currency unit. */
  amountCents?: number;
  currency?: string;
  livemode?: boolean;
  /** When Stripe made the event (ISO time): a payment made before the hold lapsed is in time. */
  createdAt?: string;
}

/**
 * The latest moment (ms) the money of this event can have been paid: Stripe's event times are whole
 * seconds, so the end of that second. Undefined when the event carries no time.
 */
export function paidBy(e: Pick<PaymentEvent, 'createdAt'>): number | undefined {
  return e.createdAt ? Date.parse(e.createdAt) + 999 : undefined;
}

/** The events that bring money: only these can confirm a purchase. */
export function bringsMoney(e: Pick<PaymentEvent, 'type' | 'paymentStatus'>): boolean {
  if (e.type === 'checkout.session.async_payment_succeeded') return true;
  return (
    e.type === 'checkout.session.completed' && (e.paymentStatus === 'paid' || e.paymentStatus === 'no_payment_required')
  );
}

/** What a purchase knows of its own payment: the session it opened and the order's total. */
export interface PaymentOwner {
  sessionId?: string;
  paymentIntentId?: string;
  amountCents?: number;
  currency?: string;
}

/**
 * Why an event is not this purchase's own, or null when it is: its Checkout Session must be the one
 * the purchase opened (a PaymentIntent event: the one it was paid with, once known), its amount and
 * currency the order's, and its livemode that of the key in use. Anyone on the same Stripe account
 * can create a session that names one of our purchases; only the purchase's own may pay for it.
 */
export function foreignEventReason(e: PaymentEvent, owner: PaymentOwner, livemode: boolean): string | null {
  if (e.livemode !== undefined && e.livemode !== livemode) {
    return `the event is ${e.livemode ? 'live' : 'test'} mode and the key in use is not`;
  }
  if (e.sessionId !== undefined) {
    if (!owner.sessionId) return `session ${e.sessionId} was not opened by this purchase (it has none yet)`;
    if (e.sessionId !== owner.sessionId) return `session ${e.sessionId} is not this purchase's (${owner.sessionId})`;
  } else if (e.paymentIntentId && owner.paymentIntentId && e.paymentIntentId !== owner.paymentIntentId) {
    return `payment ${e.paymentIntentId} is not this purchase's (${owner.paymentIntentId})`;
  }
  if (e.amountCents !== undefined && owner.amountCents !== undefined && e.amountCents !== owner.amountCents) {
    return `amount ${e.amountCents} does not match the order's ${owner.amountCents}`;
  }
  if (e.currency && owner.currency && e.currency.toLowerCase() !== owner.currency.toLowerCase()) {
    return `currency ${e.currency} does not match the order's ${owner.currency}`;
  }
  return null;
}

/** Stripe events about the money after a payment: refunds (ours and the Dashboard's) and disputes. */
export const MONEY_EVENT_TYPES = [
  'refund.created',
  'refund.updated',
  'refund.failed',
  'charge.refunded',
  'charge.dispute.created',
  'charge.dispute.updated',
  'charge.dispute.closed',
] as const;
export type MoneyEventType = (typeof MONEY_EVENT_TYPES)[number];
export function isMoneyEventType(type: string): type is MoneyEventType {
  return (MONEY_EVENT_TYPES as readonly string[]).includes(type);
}

/** A refund's news, as the refund workflows wait for it (signal `refundEvent`). */
export interface RefundEvent {
  refundId: string;
  status: string;
  failureReason?: string;
}
