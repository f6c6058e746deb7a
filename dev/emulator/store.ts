import { Problem, invalidParam, invalidRequest, resourceMissing } from './errors';
import { newId, randomToken } from './ids';
import type {
  Charge,
  CheckoutSession,
  EventType,
  LineItem,
  Metadata,
  PaymentIntent,
  Refund,
  RefundReason,
  StripeEvent,
  StripeObject,
} from './objects';

/** What caused a change: the API request (echoed in `event.request`) or, for buyer actions, nothing. */
export interface RequestRef {
  id: string | null;
  idempotencyKey: string | null;
}

const NO_REQUEST: RequestRef = { id: null, idempotencyKey: null };

export interface LineItemInput {
  name: string;
  description: string | null;
  currency: string;
  unitAmount: number;
  quantity: number;
  metadata: Metadata;
}

export interface SessionInput {
  lineItems: LineItemInput[];
  successUrl: string | null;
  cancelUrl: string | null;
  expiresAt: number | null;
  metadata: Metadata;
  clientReferenceId: string | null;
  customerEmail: string | null;
  paymentIntentData: { metadata: Metadata; description: string | null; receiptEmail: string | null };
}

export interface RefundInput {
  paymentIntent: string | null;
  charge: string | null;
  amount: number | null;
  reason: RefundReason | null;
  metadata: Metadata;
}

export const PAY_OUTCOMES = ['succeeded', 'declined', 'async_pending', 'async_succeeded', 'async_failed'] as const;
export type PayOutcome = (typeof PAY_OUTCOMES)[number];

export interface StoreDeps {
  /** Milliseconds since the epoch; an option so tests can move time forward. */
  now: () => number;
  apiVersion: string;
  /** Base URL of the hosted checkout page, resolved when the server is listening. */
  checkoutBaseUrl: () => string;
  onEvent: (event: StripeEvent) => void;
}

const MIN_EXPIRY_SECONDS = 30 * 60;
const MAX_EXPIRY_SECONDS = 24 * 60 * 60;

/**
 * State and rules of the emulated Stripe account: Checkout Sessions, PaymentIntents, Charges, Refunds
 * and the events their changes produce. Every method is synchronous, so each API call is atomic.
 */
export class EmulatorStore {
  private sessions = new Map<string, CheckoutSession>();
  private openSessions = new Set<string>();
  private intents = new Map<string, PaymentIntent>();
  private charges = new Map<string, Charge>();
  private refunds = new Map<string, Refund>();
  private events: StripeEvent[] = [];
  private eventsById = new Map<string, StripeEvent>();
  /** Line items are only part of a session when expanded, as in Stripe. */
  private lineItems = new Map<string, LineItem[]>();
  /** payment_intent_data is held until the buyer pays: the PaymentIntent is created lazily, as Stripe does. */
  private pendingIntentData = new Map<string, SessionInput['paymentIntentData']>();

  constructor(private readonly deps: StoreDeps) {}

  nowSeconds(): number {
    return Math.floor(this.deps.now() / 1000);
  }

  reset(): void {
    this.sessions.clear();
    this.openSessions.clear();
    this.intents.clear();
    this.charges.clear();
    this.refunds.clear();
    this.events = [];
    this.eventsById.clear();
    this.lineItems.clear();
    this.pendingIntentData.clear();
  }

  // ---- Checkout Sessions -------------------------------------------------------------------------

  createSession(input: SessionInput): CheckoutSession {
    const created = this.nowSeconds();
    const expiresAt = input.expiresAt ?? created + MAX_EXPIRY_SECONDS;
    if (expiresAt - created < MIN_EXPIRY_SECONDS) {
      throw invalidParam(
        'expires_at',
        'The `expires_at` timestamp must be at least 30 minutes from Checkout Session creation.',
      );
    }
    if (expiresAt - created > MAX_EXPIRY_SECONDS) {
      throw invalidParam(
        'expires_at',
        'The `expires_at` timestamp must be less than 24 hours from Checkout Session creation.',
      );
    }
    const currency = input.lineItems[0].currency;
    input.lineItems.forEach((item, index) => {
      if (item.currency !== currency) {
        throw invalidParam(
          `line_items[${index}][price_data][currency]`,
          'All line items in a Checkout Session must use the same currency.',
        );
      }
    });

    const id = newId.checkoutSession();
    const lineItems: LineItem[] = input.lineItems.map((item) => ({
      id: `li_${randomToken(24)}`,
      object: 'item',
      amount_discount: 0,
      amount_subtotal: item.unitAmount * item.quantity,
      amount_tax: 0,
      amount_total: item.unitAmount * item.quantity,
      currency: item.currency,
      description: item.name,
      metadata: item.metadata,
      price: {
        id: `price_${randomToken(24)}`,
        object: 'price',
        active: false,
        currency: item.currency,
        livemode: false,
        product: `prod_${randomToken(14)}`,
        type: 'one_time',
        unit_amount: item.unitAmount,
      },
      quantity: item.quantity,
    }));
    const amount = lineItems.reduce((sum, item) => sum + item.amount_total, 0);
    const session: CheckoutSession = {
      id,
      object: 'checkout.session',
      after_expiration: null,
      allow_promotion_codes: null,
      amount_subtotal: amount,
      amount_total: amount,
      automatic_tax: { enabled: false, liability: null, status: null },
      billing_address_collection: null,
      cancel_url: input.cancelUrl,
      client_reference_id: input.clientReferenceId,
      client_secret: null,
      consent: null,
      consent_collection: null,
      created,
      currency,
      custom_fields: [],
      custom_text: { after_submit: null, shipping_address: null, submit: null, terms_of_service_acceptance: null },
      customer: null,
      customer_creation: 'if_required',
      customer_details: null,
      customer_email: input.customerEmail,
      expires_at: expiresAt,
      invoice: null,
      invoice_creation: { enabled: false, invoice_data: null },
      livemode: false,
      locale: null,
      metadata: input.metadata,
      mode: 'payment',
      payment_intent: null,
      payment_link: null,
      payment_method_collection: 'if_required',
      payment_method_types: ['card'],
      payment_status: 'unpaid',
      recovered_from: null,
      setup_intent: null,
      shipping_address_collection: null,
      shipping_cost: null,
      shipping_options: [],
      status: 'open',
      submit_type: null,
      subscription: null,
      success_url: input.successUrl,
      total_details: { amount_discount: 0, amount_shipping: 0, amount_tax: 0 },
      ui_mode: 'hosted',
      url: `${this.deps.checkoutBaseUrl()}/checkout/${id}`,
    };
    this.sessions.set(id, session);
    this.lineItems.set(id, lineItems);
    this.openSessions.add(id);
    this.pendingIntentData.set(id, input.paymentIntentData);
    return session;
  }

  getLineItems(id: string): LineItem[] {
    this.getSession(id);
    return this.lineItems.get(id) ?? [];
  }

  getSession(id: string): CheckoutSession {
    this.expireDue();
    const session = this.sessions.get(id);
    if (!session) throw resourceMissing('checkout.session', id);
    return session;
  }

  findSession(id: string): CheckoutSession | undefined {
    this.expireDue();
    return this.sessions.get(id);
  }

  listSessions(filter: { paymentIntent?: string; status?: string }): CheckoutSession[] {
    this.expireDue();
    return [...this.sessions.values()]
      .filter((s) => filter.paymentIntent === undefined || s.payment_intent === filter.paymentIntent)
      .filter((s) => filter.status === undefined || s.status === filter.status)
      .reverse();
  }

  /** `POST /v1/checkout/sessions/:id/expire`: only an open session can be expired. */
  expireSession(id: string, request: RequestRef): CheckoutSession {
    const session = this.getSession(id);
    if (session.status !== 'open') {
      throw invalidRequest('Only Checkout Sessions with a status in ["open"] can be expired.');
    }
    this.expire(session, request);
    return session;
  }

  /** Expires every open session whose `expires_at` has passed; returns how many lapsed. */
  expireDue(): number {
    const now = this.nowSeconds();
    let lapsed = 0;
    for (const id of this.openSessions) {
      const session = this.sessions.get(id);
      if (session && session.expires_at <= now) {
        this.expire(session, NO_REQUEST);
        lapsed += 1;
      }
    }
    return lapsed;
  }

  /** Emulator action: the session lapses now, as if its `expires_at` had passed. */
  lapseSession(id: string): CheckoutSession {
    const session = this.requireSessionForAction(id);
    if (session.status !== 'open') {
      throw new Problem(400, 'session_not_open', `Checkout Session ${id} is ${session.status}, not open.`);
    }
    this.expire(session, NO_REQUEST);
    return session;
  }

  private expire(session: CheckoutSession, request: RequestRef): void {
    session.status = 'expired';
    session.url = null;
    this.openSessions.delete(session.id);
    const intent = this.intentOf(session);
    if (intent && intent.status === 'requires_payment_method') {
      intent.status = 'canceled';
      intent.canceled_at = this.nowSeconds();
      intent.cancellation_reason = 'automatic';
    }
    this.emit('checkout.session.expired', session, request);
  }

  // ---- Buyer actions -----------------------------------------------------------------------------

  /**
   * The buyer's outcome on the hosted page. `force` lets `succeeded` complete a session that already
   * expired: it simulates a payment that raced the expiry on Stripe's side.
   */
  pay(id: string, outcome: PayOutcome, options: { force?: boolean } = {}): CheckoutSession {
    const session = this.requireSessionForAction(id);
    switch (outcome) {
      case 'succeeded': {
        this.requirePayable(session, options.force === true);
        const intent = this.ensureIntent(session);
        const charge = this.newCharge(intent, 'succeeded');
        this.settleIntent(intent, charge);
        this.complete(session, 'paid');
        this.emit('checkout.session.completed', session, NO_REQUEST);
        return session;
      }
      case 'declined': {
        this.requirePayable(session, false);
        const intent = this.ensureIntent(session);
        const charge = this.newCharge(intent, 'failed');
        this.failIntent(intent, charge, {
          code: 'card_declined',
          decline_code: 'generic_decline',
          message: 'Your card was declined.',
        });
        this.emit('payment_intent.payment_failed', intent, NO_REQUEST);
        return session;
      }
      case 'async_pending': {
        this.requirePayable(session, false);
        const intent = this.ensureIntent(session);
        const charge = this.newCharge(intent, 'pending');
        intent.status = 'processing';
        intent.processing = { type: 'card' };
        intent.last_payment_error = null;
        intent.latest_charge = charge.id;
        intent.payment_method = charge.payment_method;
        this.complete(session, 'unpaid');
        this.emit('checkout.session.completed', session, NO_REQUEST);
        return session;
      }
      case 'async_succeeded': {
        const intent = this.requirePendingAsync(session);
        const charge = this.charges.get(intent.latest_charge as string) as Charge;
        charge.status = 'succeeded';
        charge.paid = true;
        charge.captured = true;
        charge.amount_captured = charge.amount;
        charge.outcome = approvedOutcome();
        this.settleIntent(intent, charge);
        session.payment_status = 'paid';
        this.emit('checkout.session.async_payment_succeeded', session, NO_REQUEST);
        return session;
      }
      case 'async_failed': {
        const intent = this.requirePendingAsync(session);
        const charge = this.charges.get(intent.latest_charge as string) as Charge;
        charge.status = 'failed';
        charge.failure_code = 'insufficient_funds';
        charge.failure_message = 'The payment could not be completed because of insufficient funds.';
        charge.outcome = declinedOutcome('insufficient_funds');
        this.failIntent(intent, charge, {
          code: 'insufficient_funds',
          message: 'The payment could not be completed because of insufficient funds.',
        });
        this.emit('checkout.session.async_payment_failed', session, NO_REQUEST);
        return session;
      }
    }
  }

  private requireSessionForAction(id: string): CheckoutSession {
    const session = this.findSession(id);
    if (!session) throw new Problem(404, 'session_not_found', `No such Checkout Session: '${id}'.`);
    return session;
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
    const intent = this.intentOf(session);
    if (session.status !== 'complete' || session.payment_status !== 'unpaid' || intent?.status !== 'processing') {
      throw new Problem(
        400,
        'no_pending_async_payment',
        `Checkout Session ${session.id} has no delayed payment awaiting settlement (pay it with outcome async_pending first).`,
      );
    }
    return intent;
  }

  private complete(session: CheckoutSession, paymentStatus: 'paid' | 'unpaid'): void {
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
    this.openSessions.delete(session.id);
  }

  private intentOf(session: CheckoutSession): PaymentIntent | undefined {
    return typeof session.payment_intent === 'string' ? this.intents.get(session.payment_intent) : undefined;
  }

  private ensureIntent(session: CheckoutSession): PaymentIntent {
    const existing = this.intentOf(session);
    if (existing) return existing;
    const data = this.pendingIntentData.get(session.id);
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
      created: this.nowSeconds(),
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
    this.intents.set(id, intent);
    session.payment_intent = id;
    return intent;
  }

  private newCharge(intent: PaymentIntent, status: Charge['status']): Charge {
    const failed = status === 'failed';
    const charge: Charge = {
      id: newId.charge(),
      object: 'charge',
      amount: intent.amount,
      amount_captured: status === 'succeeded' ? intent.amount : 0,
      amount_refunded: 0,
      balance_transaction: null,
      billing_details: { address: null, email: null, name: 'Test Buyer', phone: null },
      captured: status === 'succeeded',
      created: this.nowSeconds(),
      currency: intent.currency,
      customer: null,
      description: intent.description,
      disputed: false,
      failure_code: failed ? 'card_declined' : null,
      failure_message: failed ? 'Your card was declined.' : null,
      livemode: false,
      metadata: { ...intent.metadata },
      outcome: failed ? declinedOutcome('generic_decline') : approvedOutcome(),
      paid: status === 'succeeded',
      payment_intent: intent.id,
      payment_method: newId.paymentMethod(),
      receipt_email: intent.receipt_email,
      receipt_url: null,
      refunded: false,
      status,
    };
    this.charges.set(charge.id, charge);
    return charge;
  }

  private settleIntent(intent: PaymentIntent, charge: Charge): void {
    intent.status = 'succeeded';
    intent.amount_received = intent.amount;
    intent.canceled_at = null;
    intent.cancellation_reason = null;
    intent.last_payment_error = null;
    intent.processing = null;
    intent.latest_charge = charge.id;
    intent.payment_method = charge.payment_method;
  }

  private failIntent(
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

  // ---- PaymentIntents, Charges, Refunds ------------------------------------------------------------

  getPaymentIntent(id: string, param = 'id'): PaymentIntent {
    const intent = this.intents.get(id);
    if (!intent) throw resourceMissing('payment_intent', id, param);
    return intent;
  }

  getCharge(id: string, param = 'id'): Charge {
    const charge = this.charges.get(id);
    if (!charge) throw resourceMissing('charge', id, param);
    return charge;
  }

  createRefund(input: RefundInput, request: RequestRef): Refund {
    const charge = input.charge
      ? this.getCharge(input.charge, 'charge')
      : this.chargeToRefund(this.getPaymentIntent(input.paymentIntent as string, 'payment_intent'));
    if (input.paymentIntent && charge.payment_intent !== input.paymentIntent) {
      throw invalidRequest(`Charge ${charge.id} does not belong to PaymentIntent ${input.paymentIntent}.`, {
        param: 'charge',
      });
    }
    if (charge.status !== 'succeeded') {
      throw invalidRequest(`Charge ${charge.id} has not succeeded and cannot be refunded.`, {
        code: 'charge_not_refundable',
      });
    }
    const remaining = charge.amount - charge.amount_refunded;
    if (remaining <= 0) {
      throw invalidRequest(`Charge ${charge.id} has already been refunded.`, { code: 'charge_already_refunded' });
    }
    const amount = input.amount ?? remaining;
    if (amount > remaining) {
      throw invalidRequest(
        `Refund amount (${formatMoney(amount, charge.currency)}) is greater than unrefunded amount on charge (${formatMoney(remaining, charge.currency)})`,
        { code: 'amount_too_large', param: 'amount' },
      );
    }
    const refund: Refund = {
      id: newId.refund(),
      object: 'refund',
      amount,
      balance_transaction: null,
      charge: charge.id,
      created: this.nowSeconds(),
      currency: charge.currency,
      destination_details: {
        card: { reference_status: 'pending', reference_type: 'acquirer_reference_number', type: 'refund' },
        type: 'card',
      },
      metadata: input.metadata,
      payment_intent: charge.payment_intent,
      reason: input.reason,
      receipt_number: null,
      source_transfer_reversal: null,
      status: 'succeeded',
      transfer_reversal: null,
    };
    this.refunds.set(refund.id, refund);
    charge.amount_refunded += amount;
    charge.refunded = charge.amount_refunded >= charge.amount;
    this.emit('refund.created', refund, request);
    this.emit('charge.refunded', charge, request);
    return refund;
  }

  private chargeToRefund(intent: PaymentIntent): Charge {
    const charge = typeof intent.latest_charge === 'string' ? this.charges.get(intent.latest_charge) : undefined;
    if (intent.status !== 'succeeded' || !charge) {
      throw invalidRequest(`This PaymentIntent (${intent.id}) does not have a successful charge to refund.`, {
        code: 'payment_intent_unexpected_state',
        param: 'payment_intent',
      });
    }
    return charge;
  }

  getRefund(id: string): Refund {
    const refund = this.refunds.get(id);
    if (!refund) throw resourceMissing('refund', id);
    return refund;
  }

  listRefunds(filter: { paymentIntent?: string; charge?: string }): Refund[] {
    return [...this.refunds.values()]
      .filter((r) => filter.paymentIntent === undefined || r.payment_intent === filter.paymentIntent)
      .filter((r) => filter.charge === undefined || r.charge === filter.charge)
      .reverse();
  }

  // ---- Events --------------------------------------------------------------------------------------

  getEvent(id: string): StripeEvent {
    const event = this.eventsById.get(id);
    if (!event) throw resourceMissing('event', id);
    return event;
  }

  /** Events oldest first. */
  listEvents(filter: { type?: string } = {}): StripeEvent[] {
    return this.events.filter((e) => filter.type === undefined || e.type === filter.type);
  }

  private emit(type: EventType, object: StripeObject, request: RequestRef): void {
    const event: StripeEvent = {
      id: newId.event(),
      object: 'event',
      api_version: this.deps.apiVersion,
      created: this.nowSeconds(),
      // A snapshot: later changes to the object must not rewrite what this event said.
      data: { object: structuredClone(object) },
      livemode: false,
      pending_webhooks: 1,
      request: { id: request.id, idempotency_key: request.idempotencyKey },
      type,
    };
    this.events.push(event);
    this.eventsById.set(event.id, event);
    this.deps.onEvent(event);
  }
}

function approvedOutcome(): Charge['outcome'] {
  return {
    network_status: 'approved_by_network',
    reason: null,
    risk_level: 'normal',
    seller_message: 'Payment complete.',
    type: 'authorized',
  };
}

function declinedOutcome(reason: string): Charge['outcome'] {
  return {
    network_status: 'declined_by_network',
    reason,
    risk_level: 'normal',
    seller_message: 'The bank did not return any further details with this decline.',
    type: 'issuer_declined',
  };
}

/** Formats an amount in the currency's smallest unit, as Stripe counts it (cents, or yen for JPY). */
export function formatMoney(amount: number, currency: string): string {
  try {
    const format = new Intl.NumberFormat('en-US', { style: 'currency', currency: currency.toUpperCase() });
    return format.format(amount / 10 ** (format.resolvedOptions().maximumFractionDigits ?? 2));
  } catch {
    return `${(amount / 100).toFixed(2)} ${currency.toUpperCase()}`;
  }
}
