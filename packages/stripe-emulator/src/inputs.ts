import { StripeApiError, invalidParam, resourceMissing } from './errors';
import type { RefundReason } from './objects';
import type { ParamReader } from './params';
import { readSessionMethodParams } from './payment-methods';
import { readShippingCollection } from './shipping';
import type { LineItemInput, RefundInput, SessionInput } from './store';

// The create parameters of the Stripe API subset, read and validated into the store's inputs.

const SESSION_CREATE_PARAMS = [
  'adaptive_pricing',
  'after_expiration',
  'allow_promotion_codes',
  'allowed_payment_method_types',
  'automatic_tax',
  'billing_address_collection',
  'branding_settings',
  'cancel_url',
  'client_reference_id',
  'consent_collection',
  'currency',
  'custom_fields',
  'custom_text',
  'customer',
  'customer_account',
  'customer_creation',
  'customer_email',
  'customer_update',
  'discounts',
  'excluded_payment_method_types',
  'expand',
  'expires_at',
  'integration_identifier',
  'invoice_creation',
  'line_items',
  'locale',
  'managed_payments',
  'metadata',
  'mode',
  'name_collection',
  'optional_items',
  'origin_context',
  'payment_intent_data',
  'payment_method_collection',
  'payment_method_configuration',
  'payment_method_data',
  'payment_method_options',
  'payment_method_types',
  'permissions',
  'phone_number_collection',
  'redirect_on_completion',
  'return_url',
  'saved_payment_method_options',
  'setup_intent_data',
  'shipping_address_collection',
  'shipping_options',
  'submit_type',
  'subscription_data',
  'success_url',
  'tax_id_collection',
  'ui_mode',
  'wallet_options',
] as const;

const PAYMENT_INTENT_DATA_PARAMS = [
  'application_fee_amount',
  'capture_method',
  'description',
  'metadata',
  'on_behalf_of',
  'receipt_email',
  'setup_future_usage',
  'shipping',
  'statement_descriptor',
  'statement_descriptor_suffix',
  'transfer_data',
  'transfer_group',
] as const;

const REFUND_CREATE_PARAMS = [
  'amount',
  'charge',
  'currency',
  'customer',
  'expand',
  'instructions_email',
  'metadata',
  'origin',
  'payment_intent',
  'reason',
  'refund_application_fee',
  'reverse_transfer',
] as const;

const REFUND_REASONS: readonly RefundReason[] = ['duplicate', 'fraudulent', 'requested_by_customer'];

/** Known Stripe parameters outside the emulated subset are accepted and ignored. */
export function readSessionParams(params: ParamReader): SessionInput {
  params.allowOnly(SESSION_CREATE_PARAMS);
  const mode = params.oneOf('mode', ['payment', 'setup', 'subscription'] as const, { required: true });
  if (mode !== 'payment') {
    throw invalidParam('mode', `The payments emulator supports only mode=payment, not mode=${mode}.`);
  }
  const items = params.array('line_items');
  if (!items || items.length === 0)
    throw invalidParam('line_items', 'Missing required param: line_items.', 'parameter_missing');
  if (items.length > 100) throw invalidParam('line_items', 'A Checkout Session can have at most 100 line items.');
  const intentData = params.object('payment_intent_data')?.allowOnly(PAYMENT_INTENT_DATA_PARAMS) ?? null;
  return {
    lineItems: items.map(readLineItem),
    successUrl: params.url('success_url'),
    cancelUrl: params.url('cancel_url'),
    expiresAt: params.integer('expires_at'),
    metadata: params.metadata(),
    clientReferenceId: params.string('client_reference_id', { maxLength: 200 }),
    customerEmail: params.string('customer_email', { maxLength: 800 }),
    submitMessage: readSubmitMessage(params),
    paymentIntentData: {
      metadata: intentData?.metadata() ?? {},
      description: intentData?.string('description', { maxLength: 1000 }) ?? null,
      receiptEmail: intentData?.string('receipt_email', { maxLength: 800 }) ?? null,
    },
    shippingCountries: readShippingCollection(params),
    paymentMethods: readSessionMethodParams(params),
  };
}

/** `custom_text[submit][message]`, up to Stripe's 1,200 characters (the other custom texts are not kept). */
function readSubmitMessage(params: ParamReader): string | null {
  const custom = params.object('custom_text');
  if (!custom) return null;
  custom.allowOnly(['after_submit', 'shipping_address', 'submit', 'terms_of_service_acceptance']);
  const submit = custom.object('submit');
  if (!submit) return null;
  submit.allowOnly(['message']);
  return submit.string('message', { maxLength: 1200 });
}

function readLineItem(item: ParamReader): LineItemInput {
  item.allowOnly([
    'adjustable_quantity',
    'dynamic_tax_rates',
    'metadata',
    'price',
    'price_data',
    'quantity',
    'tax_rates',
  ]);
  const priceId = item.string('price');
  const priceData = item.object('price_data');
  if (priceId !== null && priceData === null) throw resourceMissing('price', priceId, item.name('price'));
  if (priceData === null) {
    throw invalidParam(item.name('price_data'), 'You must specify either `price` or `price_data` for each line item.');
  }
  const quantity = item.integer('quantity', { required: true, min: 1 });
  priceData.allowOnly([
    'currency',
    'product',
    'product_data',
    'recurring',
    'tax_behavior',
    'unit_amount',
    'unit_amount_decimal',
  ]);
  const currency = priceData.string('currency', { required: true }).toLowerCase();
  if (!/^[a-z]{3}$/.test(currency)) throw invalidParam(priceData.name('currency'), `Invalid currency: ${currency}`);
  if (priceData.has('recurring')) {
    throw invalidParam(
      priceData.name('recurring'),
      'You must be in `subscription` mode to use recurring prices; this session is in `payment` mode.',
    );
  }
  const productId = priceData.string('product');
  const product = priceData.object('product_data');
  if (productId !== null && product === null) throw resourceMissing('product', productId, priceData.name('product'));
  if (product === null)
    throw invalidParam(priceData.name('product_data'), 'Missing required param: product_data.', 'parameter_missing');
  product.allowOnly(['description', 'images', 'metadata', 'name', 'tax_code', 'unit_label']);
  return {
    name: product.string('name', { required: true, maxLength: 250 }),
    description: product.string('description'),
    currency,
    unitAmount: priceData.integer('unit_amount', { required: true, min: 0 }),
    quantity,
    metadata: item.metadata(),
  };
}

export function readRefundParams(params: ParamReader): RefundInput {
  params.allowOnly(REFUND_CREATE_PARAMS);
  const paymentIntent = params.string('payment_intent');
  const charge = params.string('charge');
  if (paymentIntent === null && charge === null) {
    throw new StripeApiError(
      400,
      'invalid_request_error',
      'One of the following params should be provided for this request: payment_intent or charge.',
      { code: 'parameter_missing' },
      false,
    );
  }
  return {
    paymentIntent,
    charge,
    amount: params.integer('amount', { min: 1 }),
    reason: params.oneOf('reason', REFUND_REASONS),
    metadata: params.metadata(),
  };
}
