import { Problem, invalidParam, invalidRequest, resourceMissing } from './errors';
import { newId, randomToken } from './ids';
import type { CheckoutSession, LineItem, Metadata } from './objects';
import { type SessionMethodParams, sessionPaymentMethodTypes } from './payment-methods';
import { type Account, NO_REQUEST, type PendingIntentData, type RequestRef } from './state';

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
  /** `custom_text.submit.message`: shown above the Pay button. */
  submitMessage: string | null;
  paymentIntentData: PendingIntentData;
  /** `shipping_address_collection.allowed_countries`: the buyer gives an address in one of these; null: none asked. */
  shippingCountries: string[] | null;
  /** `payment_method_types`, `allowed_payment_method_types`, `excluded_payment_method_types`. */
  paymentMethods: SessionMethodParams;
}

const MIN_EXPIRY_SECONDS = 30 * 60;
const MAX_EXPIRY_SECONDS = 24 * 60 * 60;

/**
 * Checkout Sessions: created open by any caller with a valid key (whatever its metadata), expired by
 * the API, by a lapse, or on their own at `expires_at`. Paying one is in `payments.ts`.
 */
export class Sessions {
  constructor(private readonly account: Account) {}

  create(input: SessionInput): CheckoutSession {
    const created = this.account.nowSeconds();
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

    const methodTypes = sessionPaymentMethodTypes(currency, input.paymentMethods);
    const { allowed, excluded } = input.paymentMethods;

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
      allowed_payment_method_types: allowed,
      amount_subtotal: amount,
      amount_total: amount,
      automatic_tax: { enabled: false, liability: null, status: null },
      billing_address_collection: null,
      cancel_url: input.cancelUrl,
      client_reference_id: input.clientReferenceId,
      client_secret: null,
      collected_information: null,
      consent: null,
      consent_collection: null,
      created,
      currency,
      custom_fields: [],
      custom_text: {
        after_submit: null,
        shipping_address: null,
        submit: input.submitMessage === null ? null : { message: input.submitMessage },
        terms_of_service_acceptance: null,
      },
      customer: null,
      customer_creation: 'if_required',
      customer_details: null,
      customer_email: input.customerEmail,
      ...(excluded ? { excluded_payment_method_types: excluded } : {}),
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
      payment_method_types: methodTypes,
      payment_status: 'unpaid',
      recovered_from: null,
      setup_intent: null,
      shipping_address_collection: input.shippingCountries ? { allowed_countries: input.shippingCountries } : null,
      shipping_cost: null,
      shipping_options: [],
      status: 'open',
      submit_type: null,
      subscription: null,
      success_url: input.successUrl,
      total_details: { amount_discount: 0, amount_shipping: 0, amount_tax: 0 },
      ui_mode: 'hosted',
      url: checkoutPageUrl(this.account.deps.checkoutBaseUrl(), id),
    };
    this.account.sessions.set(id, session);
    this.account.lineItems.set(id, lineItems);
    this.account.openSessions.add(id);
    this.account.pendingIntentData.set(id, input.paymentIntentData);
    return session;
  }

  lineItemsOf(id: string): LineItem[] {
    this.get(id);
    return this.account.lineItems.get(id) ?? [];
  }

  get(id: string): CheckoutSession {
    this.expireDue();
    const session = this.account.sessions.get(id);
    if (!session) throw resourceMissing('checkout.session', id);
    return session;
  }

  find(id: string): CheckoutSession | undefined {
    this.expireDue();
    return this.account.sessions.get(id);
  }

  list(filter: { paymentIntent?: string; status?: string }): CheckoutSession[] {
    this.expireDue();
    return [...this.account.sessions.values()]
      .filter((s) => filter.paymentIntent === undefined || s.payment_intent === filter.paymentIntent)
      .filter((s) => filter.status === undefined || s.status === filter.status)
      .reverse();
  }

  /** `POST /v1/checkout/sessions/:id/expire`: only an open session can be expired. */
  expireByApi(id: string, request: RequestRef): CheckoutSession {
    const session = this.get(id);
    if (session.status !== 'open') {
      throw invalidRequest('Only Checkout Sessions with a status in ["open"] can be expired.');
    }
    this.expire(session, request);
    return session;
  }

  /** Expires every open session whose `expires_at` has passed; returns how many lapsed. */
  expireDue(): number {
    const now = this.account.nowSeconds();
    let lapsed = 0;
    for (const id of this.account.openSessions) {
      const session = this.account.sessions.get(id);
      if (session && session.expires_at <= now) {
        this.expire(session, NO_REQUEST);
        lapsed += 1;
      }
    }
    return lapsed;
  }

  /** Emulator action: the session lapses now, as if its `expires_at` had passed. */
  lapse(id: string): CheckoutSession {
    const session = this.requireForAction(id);
    if (session.status !== 'open') {
      throw new Problem(400, 'session_not_open', `Checkout Session ${id} is ${session.status}, not open.`);
    }
    this.expire(session, NO_REQUEST);
    return session;
  }

  private expire(session: CheckoutSession, request: RequestRef): void {
    session.status = 'expired';
    session.url = null;
    this.account.openSessions.delete(session.id);
    const intent = this.account.intentOf(session);
    if (intent && intent.status === 'requires_payment_method') {
      intent.status = 'canceled';
      intent.canceled_at = this.account.nowSeconds();
      intent.cancellation_reason = 'automatic';
    }
    this.account.emit('checkout.session.expired', session, request);
  }

  /** A session named by a control route or the hosted page (a problem, not a Stripe error, when missing). */
  requireForAction(id: string): CheckoutSession {
    const session = this.find(id);
    if (!session) throw new Problem(404, 'session_not_found', `No such Checkout Session: '${id}'.`);
    return session;
  }

  /** After a restart on another address, open sessions point at the hosted page where it now is. */
  rebaseUrls(): void {
    for (const id of this.account.openSessions) {
      const session = this.account.sessions.get(id);
      if (session) session.url = checkoutPageUrl(this.account.deps.checkoutBaseUrl(), id);
    }
  }
}

/** A session's hosted page (its `url`), under the emulator's base URL. */
export const checkoutPageUrl = (base: string, sessionId: string): string => `${base}/checkout/${sessionId}`;

/** The session id of a hosted page's URL (a session's `url`, or the page a browser is on); throws for any other URL. */
export function sessionIdOfCheckoutUrl(url: string): string {
  const id = /^\/checkout\/([^/]+)$/.exec(new URL(url).pathname)?.[1];
  if (!id) throw new Error(`not the emulator's checkout page: ${url}`);
  return decodeURIComponent(id);
}
