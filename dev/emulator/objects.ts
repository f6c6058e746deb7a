/**
 * The Stripe objects the emulator serves, typed as the subset of fields it fills in. Field names and
 * nullability follow stripe-node's declarations (`Stripe.Checkout.Session`, `Stripe.PaymentIntent`, ...).
 */

export type Metadata = Record<string, string>;

export interface LineItem {
  id: string;
  object: 'item';
  amount_discount: number;
  amount_subtotal: number;
  amount_tax: number;
  amount_total: number;
  currency: string;
  description: string;
  metadata: Metadata;
  price: {
    id: string;
    object: 'price';
    active: boolean;
    currency: string;
    livemode: false;
    product: string;
    type: 'one_time';
    unit_amount: number;
  };
  quantity: number;
}

export type SessionStatus = 'open' | 'complete' | 'expired';
export type SessionPaymentStatus = 'paid' | 'unpaid' | 'no_payment_required';

export interface CheckoutSession {
  id: string;
  object: 'checkout.session';
  after_expiration: null;
  allow_promotion_codes: null;
  amount_subtotal: number;
  amount_total: number;
  automatic_tax: { enabled: false; liability: null; status: null };
  billing_address_collection: null;
  cancel_url: string | null;
  client_reference_id: string | null;
  client_secret: null;
  consent: null;
  consent_collection: null;
  created: number;
  currency: string;
  custom_fields: [];
  custom_text: { after_submit: null; shipping_address: null; submit: null; terms_of_service_acceptance: null };
  customer: null;
  customer_creation: 'if_required';
  customer_details: { email: string | null; name: string | null; phone: null; tax_exempt: 'none'; tax_ids: [] } | null;
  customer_email: string | null;
  expires_at: number;
  invoice: null;
  invoice_creation: { enabled: false; invoice_data: null };
  line_items?: { object: 'list'; data: LineItem[]; has_more: false; url: string };
  livemode: false;
  locale: null;
  metadata: Metadata;
  mode: 'payment';
  payment_intent: string | PaymentIntent | null;
  payment_link: null;
  payment_method_collection: 'if_required';
  payment_method_types: string[];
  payment_status: SessionPaymentStatus;
  recovered_from: null;
  setup_intent: null;
  shipping_address_collection: null;
  shipping_cost: null;
  shipping_options: [];
  status: SessionStatus;
  submit_type: null;
  subscription: null;
  success_url: string | null;
  total_details: { amount_discount: number; amount_shipping: number; amount_tax: number };
  ui_mode: 'hosted';
  url: string | null;
}

export type PaymentIntentStatus =
  | 'requires_payment_method'
  | 'requires_confirmation'
  | 'requires_action'
  | 'processing'
  | 'requires_capture'
  | 'canceled'
  | 'succeeded';

export interface LastPaymentError {
  type: 'card_error' | 'invalid_request_error';
  code: string;
  decline_code?: string;
  message: string;
  charge?: string;
  doc_url?: string;
  payment_method_type: string;
}

export interface PaymentIntent {
  id: string;
  object: 'payment_intent';
  amount: number;
  amount_capturable: number;
  amount_received: number;
  application: null;
  application_fee_amount: null;
  automatic_payment_methods: null;
  canceled_at: number | null;
  cancellation_reason: 'abandoned' | 'automatic' | 'requested_by_customer' | null;
  capture_method: 'automatic_async';
  client_secret: string;
  confirmation_method: 'automatic';
  created: number;
  currency: string;
  customer: null;
  description: string | null;
  last_payment_error: LastPaymentError | null;
  latest_charge: string | Charge | null;
  livemode: false;
  metadata: Metadata;
  next_action: null;
  on_behalf_of: null;
  payment_method: string | null;
  payment_method_types: string[];
  processing: { type: 'card' } | null;
  receipt_email: string | null;
  review: null;
  setup_future_usage: null;
  shipping: null;
  source: null;
  statement_descriptor: null;
  statement_descriptor_suffix: null;
  status: PaymentIntentStatus;
  transfer_data: null;
  transfer_group: null;
}

export interface Charge {
  id: string;
  object: 'charge';
  amount: number;
  amount_captured: number;
  amount_refunded: number;
  balance_transaction: null;
  billing_details: { address: null; email: string | null; name: string | null; phone: null };
  captured: boolean;
  created: number;
  currency: string;
  customer: null;
  description: string | null;
  disputed: false;
  failure_code: string | null;
  failure_message: string | null;
  livemode: false;
  metadata: Metadata;
  outcome: {
    network_status: string;
    reason: string | null;
    risk_level: 'normal';
    seller_message: string;
    type: string;
  };
  paid: boolean;
  payment_intent: string | PaymentIntent;
  payment_method: string;
  receipt_email: string | null;
  receipt_url: string | null;
  refunded: boolean;
  status: 'succeeded' | 'pending' | 'failed';
}

export type RefundReason = 'duplicate' | 'fraudulent' | 'requested_by_customer';

export interface Refund {
  id: string;
  object: 'refund';
  amount: number;
  balance_transaction: null;
  charge: string | Charge;
  created: number;
  currency: string;
  destination_details: {
    card: { reference_status: 'pending'; reference_type: 'acquirer_reference_number'; type: 'refund' };
    type: 'card';
  };
  metadata: Metadata;
  payment_intent: string | PaymentIntent;
  reason: RefundReason | null;
  receipt_number: null;
  source_transfer_reversal: null;
  status: 'succeeded';
  transfer_reversal: null;
}

export type EventType =
  | 'checkout.session.completed'
  | 'checkout.session.expired'
  | 'checkout.session.async_payment_succeeded'
  | 'checkout.session.async_payment_failed'
  | 'payment_intent.payment_failed'
  | 'refund.created'
  | 'charge.refunded';

export type StripeObject = CheckoutSession | PaymentIntent | Charge | Refund;

export interface StripeEvent {
  id: string;
  object: 'event';
  api_version: string;
  created: number;
  data: { object: StripeObject };
  livemode: false;
  pending_webhooks: number;
  request: { id: string | null; idempotency_key: string | null };
  type: EventType;
}

export interface ListObject<T> {
  object: 'list';
  data: T[];
  has_more: boolean;
  url: string;
}
