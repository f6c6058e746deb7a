import type { Metadata, ShippingDetails } from './common-types';
import type { PaymentMethod, PaymentMethodDetails } from './method-details';

export type { Metadata } from './common-types';
export type { PaymentMethod } from './method-details';

/**
 * The Stripe objects the emulator serves, typed as the subset of fields it fills in. Field names and
 * nullability follow stripe-node's declarations (`Stripe.Checkout.Session`, `Stripe.PaymentIntent`, ...).
 */

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
  /** `allowed_payment_method_types` as created: a filter on the methods the account offers. */
  allowed_payment_method_types: string[] | null;
  amount_subtotal: number;
  amount_total: number;
  automatic_tax: { enabled: false; liability: null; status: null };
  billing_address_collection: null;
  cancel_url: string | null;
  client_reference_id: string | null;
  client_secret: null;
  /** What the buyer entered in Checkout; the shipping address of a session that collects one, once paid. */
  collected_information: {
    business_name: null;
    individual_name: null;
    shipping_details: ShippingDetails | null;
  } | null;
  consent: null;
  consent_collection: null;
  created: number;
  currency: string;
  custom_fields: [];
  custom_text: {
    after_submit: null;
    shipping_address: null;
    submit: { message: string } | null;
    terms_of_service_acceptance: null;
  };
  customer: null;
  customer_creation: 'if_required';
  customer_details: { email: string | null; name: string | null; phone: null; tax_exempt: 'none'; tax_ids: [] } | null;
  customer_email: string | null;
  /** Present when the session was created with `excluded_payment_method_types`. */
  excluded_payment_method_types?: string[];
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
  shipping_address_collection: { allowed_countries: string[] } | null;
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
  application: null;
  application_fee: null;
  application_fee_amount: null;
  balance_transaction: null;
  billing_details: { address: null; email: string | null; name: string | null; phone: null; tax_id: null };
  calculated_statement_descriptor: string | null;
  captured: boolean;
  created: number;
  currency: string;
  customer: null;
  description: string | null;
  disputed: boolean;
  failure_balance_transaction: null;
  failure_code: string | null;
  failure_message: string | null;
  fraud_details: Record<string, never>;
  livemode: false;
  metadata: Metadata;
  on_behalf_of: null;
  outcome: {
    advice_code: null;
    network_advice_code: null;
    network_decline_code: string | null;
    network_status: string;
    reason: string | null;
    risk_level: 'normal';
    risk_score: number;
    seller_message: string;
    type: string;
  };
  paid: boolean;
  payment_intent: string | PaymentIntent;
  payment_method: string;
  payment_method_details: PaymentMethodDetails;
  receipt_email: string | null;
  receipt_number: null;
  receipt_url: string | null;
  refunded: boolean;
  review: null;
  shipping: null;
  source: null;
  source_transfer: null;
  statement_descriptor: null;
  statement_descriptor_suffix: null;
  status: 'succeeded' | 'pending' | 'failed';
  transfer_data: null;
  transfer_group: null;
}

export type RefundReason = 'duplicate' | 'fraudulent' | 'requested_by_customer';

/**
 * `pending` until the card network confirms, then `succeeded`; a refund can still turn `failed` after
 * that (Stripe's refund-fails-asynchronously case), which gives the amount back to the charge.
 */
export type RefundStatus = 'pending' | 'succeeded' | 'failed' | 'canceled';

export type RefundFailureReason =
  | 'charge_for_pending_refund_disputed'
  | 'declined'
  | 'expired_or_canceled_card'
  | 'insufficient_funds'
  | 'lost_or_stolen_card'
  | 'merchant_request'
  | 'unknown';

export interface Refund {
  id: string;
  object: 'refund';
  amount: number;
  balance_transaction: null;
  charge: string | Charge;
  created: number;
  currency: string;
  customer: null;
  customer_account: null;
  /** Where the money goes back: a card's has its reference; other methods tell only their type. */
  destination_details:
    | {
        card: {
          reference_status: 'pending' | 'available' | 'unavailable';
          reference_type: 'acquirer_reference_number';
          type: 'refund' | 'reversal';
        };
        type: 'card';
      }
    | { type: Exclude<PaymentMethodDetails['type'], 'card'> };
  /** Present once the refund failed. */
  failure_reason?: RefundFailureReason;
  metadata: Metadata;
  payment_intent: string | PaymentIntent;
  payment_method: string;
  /** Present while the refund is pending. */
  pending_reason?: 'processing';
  reason: RefundReason | null;
  receipt_number: null;
  source_transfer_reversal: null;
  status: RefundStatus;
  transfer_reversal: null;
}

export type DisputeReason =
  | 'bank_cannot_process'
  | 'credit_not_processed'
  | 'customer_initiated'
  | 'debit_not_authorized'
  | 'duplicate'
  | 'fraudulent'
  | 'general'
  | 'incorrect_account_details'
  | 'insufficient_funds'
  | 'product_not_received'
  | 'product_unacceptable'
  | 'subscription_canceled'
  | 'unrecognized';

export type DisputeStatus = 'needs_response' | 'under_review' | 'won' | 'lost';

/** Evidence fields a merchant may submit; all empty until then. */
export type DisputeEvidence = Record<
  | 'access_activity_log'
  | 'billing_address'
  | 'cancellation_policy'
  | 'cancellation_policy_disclosure'
  | 'cancellation_rebuttal'
  | 'customer_communication'
  | 'customer_email_address'
  | 'customer_name'
  | 'customer_purchase_ip'
  | 'customer_signature'
  | 'duplicate_charge_documentation'
  | 'duplicate_charge_explanation'
  | 'duplicate_charge_id'
  | 'product_description'
  | 'receipt'
  | 'refund_policy'
  | 'refund_policy_disclosure'
  | 'refund_refusal_explanation'
  | 'service_date'
  | 'service_documentation'
  | 'shipping_address'
  | 'shipping_carrier'
  | 'shipping_date'
  | 'shipping_documentation'
  | 'shipping_tracking_number'
  | 'uncategorized_file'
  | 'uncategorized_text',
  null
> & { enhanced_evidence: Record<string, never> };

export interface Dispute {
  id: string;
  object: 'dispute';
  amount: number;
  balance_transactions: [];
  charge: string | Charge;
  created: number;
  currency: string;
  enhanced_eligibility_types: [];
  evidence: DisputeEvidence;
  evidence_details: {
    due_by: number | null;
    enhanced_eligibility: Record<string, never>;
    has_evidence: boolean;
    past_due: boolean;
    submission_count: number;
    submission_method: 'not_submitted' | 'manual';
  };
  intended_submission_method: null;
  is_charge_refundable: boolean;
  livemode: false;
  metadata: Metadata;
  network_reason_code: string | null;
  payment_intent: string | PaymentIntent | null;
  /** Only for a card payment: Stripe's dispute details know no bank debit or Link. */
  payment_method_details?: {
    card: { brand: string; case_type: 'chargeback'; network: string; network_reason_code: string | null };
    type: 'card';
  };
  reason: DisputeReason;
  status: DisputeStatus;
}

export type EventType =
  | 'checkout.session.completed'
  | 'checkout.session.expired'
  | 'checkout.session.async_payment_succeeded'
  | 'checkout.session.async_payment_failed'
  | 'payment_intent.payment_failed'
  | 'refund.created'
  | 'refund.updated'
  | 'refund.failed'
  | 'charge.refunded'
  | 'charge.dispute.created'
  | 'charge.dispute.funds_withdrawn'
  | 'charge.dispute.closed'
  | 'charge.dispute.funds_reinstated';

export type StripeObject = CheckoutSession | PaymentIntent | Charge | Refund | Dispute | PaymentMethod;

export interface StripeEvent {
  id: string;
  object: 'event';
  api_version: string;
  created: number;
  /** `previous_attributes` on `*.updated` events: the changed fields as they were before. */
  data: { object: StripeObject; previous_attributes?: Record<string, unknown> };
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
