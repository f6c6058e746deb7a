// The few types that the declarations of Stripe's objects (objects.ts, method-details.ts) and the
// modules with Stripe's rules (params.ts, payment-methods.ts, shipping.ts) share. They live here and
// this module imports nothing, so those modules import one another in one direction only: the rules
// import the objects, never the other way round.

/** Stripe's `metadata`: string keys to string values. */
export type Metadata = Record<string, string>;

/** The payment methods the emulated account has turned on (payment-methods.ts: which a session offers). */
export const PAYMENT_METHOD_TYPES = ['card', 'link', 'sepa_debit', 'bacs_debit', 'us_bank_account'] as const;
export type PaymentMethodType = (typeof PAYMENT_METHOD_TYPES)[number];

/**
 * The buyer's method with every default filled in: Stripe's fingerprint of the card or bank account
 * (none for Link, which has none on the charge), and the buyer's email as Checkout collected it (for
 * Link, the Link account's).
 */
export type BuyerMethod =
  | { type: Exclude<PaymentMethodType, 'link'>; fingerprint: string; email: string }
  | { type: 'link'; fingerprint: null; email: string };

/** A shipping address and the name on it, as Stripe reports them (`collected_information.shipping_details`). */
export interface ShippingDetails {
  name: string;
  address: {
    line1: string | null;
    line2: string | null;
    city: string | null;
    postal_code: string | null;
    state: string | null;
    country: string | null;
  };
}
