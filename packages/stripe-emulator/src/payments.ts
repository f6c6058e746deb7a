import { approvedOutcome, declinedOutcome, newCharge } from './charges';
import type { BuyerMethod, ShippingDetails } from './common-types';
import { Problem } from './errors';
import { newId } from './ids';
import type { Charge, CheckoutSession, PaymentIntent } from './objects';
import { type PaymentMethodChoice, buyerMethod } from './payment-methods';
import type { Sessions } from './sessions';
import { collectShipping, requireShipping } from './shipping';
import { type Account, NO_REQUEST } from './state';

export const PAY_OUTCOMES = ['succeeded', 'declined', 'async_pending', 'async_succeeded', 'async_failed'] as const;
export type PayOutcome = (typeof PAY_OUTCOMES)[number];

/** The outcomes that put a new charge on the buyer's card (the others settle one already made). */
export const CHARGING_OUTCOMES: readonly PayOutcome[] = ['succeeded', 'declined', 'async_pending'];

export interface PayOptions {
  /** Lets `succeeded` complete a session that already expired (a payment that raced the expiry). */
  force?: boolean;
  /**
   * What the buyer pays with (payment-methods.ts); by default a card of this session's own, the same
   * on every try. It must be one the session offers, and a bank debit only pays `async_pending`.
   */
  paymentMethod?: PaymentMethodChoice;
  /** Where to ship: needed to complete a session that collects an address (shipping.ts). */
  shipping?: ShippingDetails;
}

/**
 * The buyer's side: paying a Checkout Session creates its PaymentIntent (lazily, as Stripe does) and a
 * Charge per attempt, and sends the events Stripe sends for each outcome.
 */
export class Payments {
  constructor(
    private readonly account: Account,
    private readonly sessions: Sessions,
  ) {}

  pay(id: string, outcome: PayOutcome, options: PayOptions = {}): CheckoutSession {
    const session = this.sessions.requireForAction(id);
    switch (outcome) {
      case 'succeeded': {
        this.requirePayable(session, options.force === true);
        requireShipping(session, options.shipping);
        const method = buyerMethod(session, outcome, options.paymentMethod);
        const intent = this.ensureIntent(session);
        const charge = newCharge(this.account, intent, 'succeeded', method);
        settleIntent(intent, charge);
        this.complete(session, 'paid', method, options.shipping);
        this.account.emit('checkout.session.completed', session, NO_REQUEST);
        return session;
      }
      case 'declined': {
        this.requirePayable(session, false);
        const method = buyerMethod(session, outcome, options.paymentMethod);
        const intent = this.ensureIntent(session);
        const charge = newCharge(this.account, intent, 'failed', method);
        failIntent(intent, charge, {
          code: 'card_declined',
          decline_code: 'generic_decline',
          message: 'Your card was declined.',
        });
        this.account.emit('payment_intent.payment_failed', intent, NO_REQUEST);
        return session;
      }
      case 'async_pending': {
        this.requirePayable(session, false);
        requireShipping(session, options.shipping);
        const method = buyerMethod(session, outcome, options.paymentMethod);
        const intent = this.ensureIntent(session);
        const charge = newCharge(this.account, intent, 'pending', method);
        intent.status = 'processing';
        // Stripe's `processing` hash describes only cards (its type is `card` or nothing).
        intent.processing = method.type === 'card' ? { type: 'card' } : null;
        intent.last_payment_error = null;
        intent.latest_charge = charge.id;
        intent.payment_method = charge.payment_method;
        this.complete(session, 'unpaid', method, options.shipping);
        this.account.emit('checkout.session.completed', session, NO_REQUEST);
        return session;
      }
      case 'async_succeeded': {
        const intent = this.requirePendingAsync(session);
        const charge = this.account.getCharge(intent.latest_charge as string);
        charge.status = 'succeeded';
        charge.paid = true;
        charge.captured = true;
        charge.amount_captured = charge.amount;
        charge.outcome = approvedOutcome();
        settleIntent(intent, charge);
        session.payment_status = 'paid';
        this.account.emit('checkout.session.async_payment_succeeded', session, NO_REQUEST);
        return session;
      }
      case 'async_failed': {
        const intent = this.requirePendingAsync(session);
        const charge = this.account.getCharge(intent.latest_charge as string);
        const message = 'The payment could not be completed because of insufficient funds.';
        charge.status = 'failed';
        charge.failure_code = 'insufficient_funds';
        charge.failure_message = message;
        charge.outcome = declinedOutcome('insufficient_funds');
        failIntent(intent, charge, { code: 'insufficient_funds', message });
        // Stripe reports the failed PaymentIntent as well as the session whose payment it was.
        this.account.emit('payment_intent.payment_failed', intent, NO_REQUEST);
        this.account.emit('checkout.session.async_payment_failed', session, NO_REQUEST);
        return session;
      }
    }
  }

  private requirePayable(session: CheckoutSession, force: boolean): void {
    if (session.status === 'open') return;
    if (session.status === 'expired') {
      if (force) return;
      throw new Problem(
        400,
        'session_expired',
        `Checkout Session ${session.id} expired at ${new Date(session.expires_at * 1000).toISOString()}; it can no longer be paid (pass force: true with outcome succeeded to simulate a payment that raced the expiry).`,
      );
    }
    throw new Problem(400, 'session_complete', `Checkout Session ${session.id} is already complete.`);
  }

  private requirePendingAsync(session: CheckoutSession): PaymentIntent {
    const intent = this.account.intentOf(session);
    if (session.status !== 'complete' || session.payment_status !== 'unpaid' || intent?.status !== 'processing') {
      throw new Problem(
        400,
        'no_pending_async_payment',
        `Checkout Session ${session.id} has no delayed payment awaiting settlement (pay it with outcome async_pending first).`,
      );
    }
    return intent;
  }

  private complete(
    session: CheckoutSession,
    paymentStatus: 'paid' | 'unpaid',
    method: BuyerMethod,
    shipping?: ShippingDetails,
  ): void {
    collectShipping(session, shipping);
    session.status = 'complete';
    session.payment_status = paymentStatus;
    session.url = null;
    session.customer_details = {
      email: method.email,
      name: 'Test Buyer',
      phone: null,
      tax_exempt: 'none',
      tax_ids: [],
    };
    this.account.openSessions.delete(session.id);
  }

  private ensureIntent(session: CheckoutSession): PaymentIntent {
    const existing = this.account.intentOf(session);
    if (existing) return existing;
    const data = this.account.pendingIntentData.get(session.id);
    const id = newId.paymentIntent();
    const intent: PaymentIntent = {
      id,
      object: 'payment_intent',
      amount: session.amount_total,
      amount_capturable: 0,
      amount_received: 0,
      application: null,
      application_fee_amount: null,
      automatic_payment_methods: null,
      canceled_at: null,
      cancellation_reason: null,
      capture_method: 'automatic_async',
      client_secret: newId.clientSecret(id),
      confirmation_method: 'automatic',
      created: this.account.nowSeconds(),
      currency: session.currency,
      customer: null,
      description: data?.description ?? null,
      last_payment_error: null,
      latest_charge: null,
      livemode: false,
      metadata: { ...(data?.metadata ?? {}) },
      next_action: null,
      on_behalf_of: null,
      payment_method: null,
      // Checkout's PaymentIntent accepts what its session offers: a retry may use another method.
      payment_method_types: [...session.payment_method_types],
      processing: null,
      receipt_email: data?.receiptEmail ?? null,
      review: null,
      setup_future_usage: null,
      shipping: null,
      source: null,
      statement_descriptor: null,
      statement_descriptor_suffix: null,
      status: 'requires_payment_method',
      transfer_data: null,
      transfer_group: null,
    };
    this.account.intents.set(id, intent);
    session.payment_intent = id;
    return intent;
  }
}

function settleIntent(intent: PaymentIntent, charge: Charge): void {
  intent.status = 'succeeded';
  intent.amount_received = intent.amount;
  intent.canceled_at = null;
  intent.cancellation_reason = null;
  intent.last_payment_error = null;
  intent.processing = null;
  intent.latest_charge = charge.id;
  intent.payment_method = charge.payment_method;
}

function failIntent(
  intent: PaymentIntent,
  charge: Charge,
  error: { code: string; decline_code?: string; message: string },
): void {
  intent.status = 'requires_payment_method';
  intent.processing = null;
  intent.latest_charge = charge.id;
  intent.payment_method = null;
  intent.last_payment_error = {
    type: 'card_error',
    ...error,
    charge: charge.id,
    doc_url: `https://stripe.com/docs/error-codes/${error.code.replace(/_/g, '-')}`,
    payment_method_type: charge.payment_method_details.type,
  };
}
