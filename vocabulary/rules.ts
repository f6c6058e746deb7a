// The purchase rules' shared words (store/rules/): what a payment shows the rules, and how a rule
// refuses it. Zero imports, like the rest of the vocabulary: the saga acts on these values and never
// names a rule.

/**
 * The product terms of their own columns that switch on a purchase rule that reads the payment.
 * The saga reads the payment's evidence only for a product that sets one of them, or a term of a
 * rule added through the rules module (kept with the product's `rules`): a new rule over evidence
 * already gathered is a file in store/rules/, and no workflow command.
 */
export const PAYMENT_RULE_TERMS = ['maxPerCard', 'maxPerAddress'] as const;
export type PaymentRuleTerm = (typeof PAYMENT_RULE_TERMS)[number];

/**
 * Whether any rule that reads the payment applies to a product with these terms: one of the terms
 * above, or a term of a rule added through the rules module (`rules`, whose every rule reads it).
 */
export function paymentRulesApply(
  terms: (Partial<Record<PaymentRuleTerm, unknown>> & { rules?: Record<string, unknown> }) | undefined,
): boolean {
  if (terms?.rules && Object.keys(terms.rules).length > 0) return true;
  return PAYMENT_RULE_TERMS.some((t) => {
    const v = terms?.[t];
    return v !== undefined && v !== null && !(Array.isArray(v) && v.length === 0);
  });
}

/**
 * What a paid Checkout Session shows the rules, read from Stripe in one call (the session with its
 * PaymentIntent and latest charge): no address or account number, only keys made from them.
 */
export interface PaymentEvidence {
  paymentIntentId?: string;
  /**
   * The method that paid: its type as Stripe names it (`card`, `sepa_debit`, `bacs_debit`,
   * `us_bank_account`, `link`, …) and the fingerprint Stripe gives that method, where it gives one
   * (a card's, a bank account's; a Link payment carries none).
   */
  method?: { type: string; fingerprint?: string };
  /** The key of the shipping address Checkout collected (normalised and hashed: store/addresses.ts). */
  addressKey?: string;
  /** The shipping address's country (ISO code). */
  shippingCountry?: string;
}

/** A rule's refusal of a payment: the money goes back, the buyer is told `reason` (notification `kind`). */
export interface RuleRefusal {
  rule: string;
  kind: string;
  reason: string;
}
