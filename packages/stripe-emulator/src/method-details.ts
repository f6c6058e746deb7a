import type { BuyerMethod, Metadata, PaymentMethodType } from './common-types';

// What each payment method looks like on a Charge (`payment_method_details`) and as a PaymentMethod
// object, with Stripe's test-mode values: the 4242 Visa, the IBAN DE89 3704 0044 0532 0130 00, the
// Bacs sort code 10-88-00 and account 00012345, the ACH routing number 110000000 and account
// 000123456789. Field names and nullability follow stripe-node's `Stripe.Charge.PaymentMethodDetails`
// and `Stripe.PaymentMethod` (checked by tsc in test/unit/shapes.test.ts).

/** What the buyer's card looked like; `fingerprint` is the same for the same card number. */
export interface CardDetails {
  amount_authorized: number | null;
  authorization_code: string | null;
  brand: string;
  checks: { address_line1_check: null; address_postal_code_check: null; cvc_check: 'pass' | 'fail' };
  country: string;
  electronic_commerce_indicator: null;
  exp_month: number;
  exp_year: number;
  fingerprint: string;
  funding: 'credit' | 'debit';
  installments: null;
  last4: string;
  mandate: null;
  network: string;
  network_transaction_id: string | null;
  regulated_status: 'unregulated';
  three_d_secure: null;
  transaction_link_id: null;
  wallet: null;
}

/** The bank account behind a SEPA Direct Debit; `fingerprint` is the same for the same IBAN. */
export interface SepaDebitDetails {
  bank_code: string;
  branch_code: string;
  country: string;
  fingerprint: string;
  last4: string;
  mandate: string;
}

export interface BacsDebitDetails {
  fingerprint: string;
  last4: string;
  mandate: string;
  sort_code: string;
}

export interface UsBankAccountDetails {
  account_holder_type: 'individual' | 'company';
  account_type: 'checking' | 'savings';
  bank_name: string;
  fingerprint: string;
  last4: string;
  mandate: string;
  payment_reference: null;
  routing_number: string;
}

/** Stripe tells only where the money beneath a Link payment comes from: no card, no fingerprint. */
export interface LinkDetails {
  country: string;
}

/** `payment_method_details` of a Charge: `type` and the hash named after it. */
export type PaymentMethodDetails =
  | { type: 'card'; card: CardDetails }
  | { type: 'link'; link: LinkDetails }
  | { type: 'sepa_debit'; sepa_debit: SepaDebitDetails }
  | { type: 'bacs_debit'; bacs_debit: BacsDebitDetails }
  | { type: 'us_bank_account'; us_bank_account: UsBankAccountDetails };

export interface BillingDetails {
  address: null;
  email: string | null;
  name: string | null;
  phone: null;
  tax_id: null;
}

/** The PaymentMethod a Checkout attempt creates (`GET /v1/payment_methods/:id`). */
export interface PaymentMethod {
  id: string;
  object: 'payment_method';
  allow_redisplay: 'unspecified';
  billing_details: BillingDetails;
  created: number;
  customer: null;
  customer_account: null;
  livemode: false;
  metadata: Metadata;
  type: PaymentMethodType;
  card?: {
    brand: string;
    checks: { address_line1_check: null; address_postal_code_check: null; cvc_check: 'pass' };
    country: string;
    display_brand: string;
    exp_month: number;
    exp_year: number;
    fingerprint: string;
    funding: 'credit';
    generated_from: null;
    last4: string;
    networks: { available: string[]; preferred: null };
    regulated_status: 'unregulated';
    three_d_secure_usage: { supported: boolean };
    wallet: null;
  };
  /** The Link account: the only thing Stripe tells about who pays with Link. */
  link?: { email: string };
  sepa_debit?: Omit<SepaDebitDetails, 'mandate'> & { generated_from: null };
  bacs_debit?: Omit<BacsDebitDetails, 'mandate'>;
  us_bank_account?: Omit<UsBankAccountDetails, 'mandate' | 'payment_reference'> & {
    financial_connections_account: null;
    networks: { preferred: 'ach'; supported: ['ach'] };
    status_details: null;
  };
}

const BANK_ACCOUNTS = {
  sepa_debit: { bank_code: '37040044', branch_code: '', country: 'DE', last4: '3000' },
  bacs_debit: { last4: '2345', sort_code: '108800' },
  us_bank_account: {
    account_holder_type: 'individual',
    account_type: 'checking',
    bank_name: 'STRIPE TEST BANK',
    last4: '6789',
    routing_number: '110000000',
  },
} as const;

/**
 * The charge's `payment_method_details`. `mandate` is the id of the debit's mandate (one per
 * PaymentMethod, as Checkout makes one with each bank debit); `authorized` is the card's
 * authorisation of `amount`, null once declined.
 */
export function chargeMethodDetails(
  method: BuyerMethod,
  mandate: string,
  authorized: { amount: number; code: string } | null,
): PaymentMethodDetails {
  if (method.type === 'link') return { type: 'link', link: { country: 'US' } };
  const { fingerprint } = method;
  switch (method.type) {
    case 'card':
      return {
        type: 'card',
        card: {
          ...cardDetails(fingerprint),
          amount_authorized: authorized?.amount ?? null,
          authorization_code: authorized?.code ?? null,
        },
      };
    case 'sepa_debit':
      return { type: 'sepa_debit', sepa_debit: { ...BANK_ACCOUNTS.sepa_debit, fingerprint, mandate } };
    case 'bacs_debit':
      return { type: 'bacs_debit', bacs_debit: { ...BANK_ACCOUNTS.bacs_debit, fingerprint, mandate } };
    case 'us_bank_account':
      return {
        type: 'us_bank_account',
        us_bank_account: { ...BANK_ACCOUNTS.us_bank_account, fingerprint, mandate, payment_reference: null },
      };
  }
}

/** Card payments leave the email off; Stripe needs one with a bank debit's mandate, and Link is the email. */
export function billingDetails(method: BuyerMethod): BillingDetails {
  return {
    address: null,
    email: method.type === 'card' ? null : method.email,
    name: 'Test Buyer',
    phone: null,
    tax_id: null,
  };
}

export function paymentMethodObject(id: string, method: BuyerMethod, created: number): PaymentMethod {
  const base: PaymentMethod = {
    id,
    object: 'payment_method',
    allow_redisplay: 'unspecified',
    billing_details: billingDetails(method),
    created,
    customer: null,
    customer_account: null,
    livemode: false,
    metadata: {},
    type: method.type,
  };
  if (method.type === 'link') return { ...base, link: { email: method.email } };
  const { fingerprint } = method;
  switch (method.type) {
    case 'card': {
      const card = cardDetails(fingerprint);
      return {
        ...base,
        card: {
          brand: card.brand,
          checks: { address_line1_check: null, address_postal_code_check: null, cvc_check: 'pass' },
          country: card.country,
          display_brand: card.brand,
          exp_month: card.exp_month,
          exp_year: card.exp_year,
          fingerprint,
          funding: 'credit',
          generated_from: null,
          last4: card.last4,
          networks: { available: [card.network], preferred: null },
          regulated_status: 'unregulated',
          three_d_secure_usage: { supported: true },
          wallet: null,
        },
      };
    }
    case 'sepa_debit':
      return { ...base, sepa_debit: { ...BANK_ACCOUNTS.sepa_debit, fingerprint, generated_from: null } };
    case 'bacs_debit':
      return { ...base, bacs_debit: { ...BANK_ACCOUNTS.bacs_debit, fingerprint } };
    case 'us_bank_account':
      return {
        ...base,
        us_bank_account: {
          ...BANK_ACCOUNTS.us_bank_account,
          fingerprint,
          financial_connections_account: null,
          networks: { preferred: 'ach', supported: ['ach'] },
          status_details: null,
        },
      };
  }
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
