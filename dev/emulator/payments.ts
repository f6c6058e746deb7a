import { createHash } from 'node:crypto';

import { Problem } from './errors';
import { newId } from './ids';
import type { CardDetails, Charge, CheckoutSession, PaymentIntent } from './objects';
import type { Sessions } from './sessions';
import { collectShipping, requireShipping, type ShippingDetails } from './shipping';
import { type Account, NO_REQUEST } from './state';

export const PAY_OUTCOMES = ['succeeded', 'declined', 'async_pending', 'async_succeeded', 'async_failed'] as const;
export type PayOutcome = (typeof PAY_OUTCOMES)[number];

/** The outcomes that put a new charge on the buyer's card (the others settle one already made). */
export const CHARGING_OUTCOMES: readonly PayOutcome[] = ['succeeded', 'declined', 'async_pending'];

export interface PayOptions {
  /** Lets `succeeded` complete a session that already expired (a payment that raced the expiry). */
  force?: boolean;
  /** The card the buyer pays with; by default a card of this session's own, the same on every try. */
  card?: { fingerprint?: string };
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
    const card = (): CardDetails => cardDetails(options.card?.fingerprint ?? defaultFingerprint(session.id));
    switch (outcome) {
      case 'succeeded': {
        this.requirePayable(session, options.force === true);
        requireShipping(session, options.shipping);
        const intent = this.ensureIntent(session);
        const charge = this.newCharge(intent, 'succeeded', card());
        settleIntent(intent, charge);
        this.complete(session, 'paid', options.shipping);
        this.account.emit('checkout.session.completed', session, NO_REQUEST);
        return session;
      }
      case 'declined': {
        this.requirePayable(session, false);
        const intent = this.ensureIntent(session);
        const charge = this.newCharge(intent, 'failed', card());
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
        const intent = this.ensureIntent(session);
        const charge = this.newCharge(intent, 'pending', card());
        intent.status = 'processing';
        intent.processing = { type: 'card' };
        intent.last_payment_error = null;
        intent.latest_charge = charge.id;
        intent.payment_method = charge.payment_method;
        this.complete(session, 'unpaid', options.shipping);
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

  private complete(session: CheckoutSession, paymentStatus: 'paid' | 'unpaid', shipping?: ShippingDetails): void {
    collectShipping(session, shipping);
    session.status = 'complete';
    session.payment_status = paymentStatus;
    session.url = null;
    session.customer_details = {
      email: session.customer_email ?? 'buyer@example.com',
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
      payment_method_types: ['card'],
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

  private newCharge(intent: PaymentIntent, status: Charge['status'], card: CardDetails): Charge {
    const failed = status === 'failed';
    const succeeded = status === 'succeeded';
    const charge: Charge = {
      id: newId.charge(),
      object: 'charge',
      amount: intent.amount,
      amount_captured: succeeded ? intent.amount : 0,
      amount_refunded: 0,
      application: null,
      application_fee: null,
      application_fee_amount: null,
      balance_transaction: null,
      billing_details: { address: null, email: null, name: 'Test Buyer', phone: null, tax_id: null },
      calculated_statement_descriptor: 'FLASH SALE EMULATOR',
      captured: succeeded,
      created: this.account.nowSeconds(),
      currency: intent.currency,
      customer: null,
      description: intent.description,
      disputed: false,
      failure_balance_transaction: null,
      failure_code: failed ? 'card_declined' : null,
      failure_message: failed ? 'Your card was declined.' : null,
      fraud_details: {},
      livemode: false,
      metadata: { ...intent.metadata },
      on_behalf_of: null,
      outcome: failed ? declinedOutcome('generic_decline') : approvedOutcome(),
      paid: succeeded,
      payment_intent: intent.id,
      payment_method: newId.paymentMethod(),
      payment_method_details: {
        card: {
          ...card,
          amount_authorized: failed ? null : intent.amount,
          authorization_code: failed ? null : '123456',
        },
        type: 'card',
      },
      receipt_email: intent.receipt_email,
      receipt_number: null,
      receipt_url: null,
      refunded: false,
      review: null,
      shipping: null,
      source: null,
      source_transfer: null,
      statement_descriptor: null,
      statement_descriptor_suffix: null,
      status,
      transfer_data: null,
      transfer_group: null,
    };
    this.account.charges.set(charge.id, charge);
    return charge;
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
    payment_method_type: 'card',
  };
}

/** Stripe fingerprints are 16 alphanumerics; the default is derived from the session, so it is stable. */
export function defaultFingerprint(sessionId: string): string {
  return createHash('sha256')
    .update(`card:${sessionId}`)
    .digest('base64')
    .replace(/[^A-Za-z0-9]/g, '')
    .slice(0, 16);
}

function cardDetails(fingerprint: string): CardDetails {
  return {
    amount_authorized: null,
    authorization_code: null,
    brand: 'visa',
    checks: { address_line1_check: null, address_postal_code_check: null, cvc_check: 'pass' },
    country: 'US',
    electronic_commerce_indicator: null,
    exp_month: 12,
    exp_year: 2034,
    fingerprint,
    funding: 'credit',
    installments: null,
    last4: '4242',
    mandate: null,
    network: 'visa',
    network_transaction_id: null,
    regulated_status: 'unregulated',
    three_d_secure: null,
    transaction_link_id: null,
    wallet: null,
  };
}

function approvedOutcome(): Charge['outcome'] {
  return {
    advice_code: null,
    network_advice_code: null,
    network_decline_code: null,
    network_status: 'approved_by_network',
    reason: null,
    risk_level: 'normal',
    risk_score: 20,
    seller_message: 'Payment complete.',
    type: 'authorized',
  };
}

function declinedOutcome(reason: string): Charge['outcome'] {
  return {
    advice_code: null,
    network_advice_code: null,
    network_decline_code: null,
    network_status: 'declined_by_network',
    reason,
    risk_level: 'normal',
    risk_score: 20,
    seller_message: 'The bank did not return any further details with this decline.',
    type: 'issuer_declined',
  };
}
