import type { ProductTerms } from '../../vocabulary';
import type { RuleRefusal } from '../../vocabulary/rules';
import { forgetClaims } from '../claims';
import type { Db } from '../db';
import { acceptedPaymentMethods } from './accepted-payment-methods';
import { perAddress } from './per-address';
import { perPaymentMethod } from './per-payment-method';
import type { PerPurchaseCap, PurchaseRule, RefusedProduct, RuleCase } from './rule';
import { shippingCountry } from './shipping-country';

// The purchase rules that judge a payment, in the order they are asked: one file per rule. The saga
// asks them all through one activity (judgePayment) and acts on the answer; a rule added here that
// reads the evidence already gathered (vocabulary/rules.ts) changes no workflow command. The rules
// decided before any payment (one place per buyer and SKU, the per-buyer limit) are the hold's:
// store/open-purchase.ts and the hold desk.

export const PAYMENT_RULES: readonly PurchaseRule[] = [
  shippingCountry,
  acceptedPaymentMethods,
  perPaymentMethod,
  perAddress,
];

/**
 * The payment methods Checkout may offer this product (`allowed_payment_method_types`): those every
 * applying rule that prevents allows; undefined when no rule restricts them, or when together they
 * allow none (then the payments are refused and refunded, not prevented).
 */
export function checkoutPaymentMethods(terms: ProductTerms): string[] | undefined {
  let allowed: readonly string[] | undefined;
  for (const rule of PAYMENT_RULES) {
    if (!rule.checkoutMethods || !rule.appliesTo(terms)) continue;
    const mine = rule.checkoutMethods(terms);
    allowed = allowed ? allowed.filter((m) => mine.includes(m)) : mine;
  }
  return allowed?.length ? [...allowed] : undefined;
}

/** The rules that apply to a product, in the buyer's words (the product page shows them beside the price). */
export function rulesInWords(terms: ProductTerms): string[] {
  return PAYMENT_RULES.filter((r) => r.appliesTo(terms)).map((r) => r.inWords(terms));
}

/** A rule's refusal of a payment in the buyer's words (null: no rule's, shown as it is kept). */
export function refusalInWords(reason: string, product: RefusedProduct): string | null {
  for (const rule of PAYMENT_RULES) {
    const words = rule.refusalInWords(reason, product);
    if (words) return words;
  }
  return null;
}

/**
 * The most units one purchase may take under the applying rules, and the term that sets it (the
 * first rule's, of equal ones); undefined when none caps it.
 */
export function perPurchaseLimit(terms: ProductTerms): PerPurchaseCap | undefined {
  const caps = PAYMENT_RULES.flatMap((r) => (r.perPurchase && r.appliesTo(terms) ? [r.perPurchase(terms)] : []));
  return caps.reduce<PerPurchaseCap | undefined>((least, c) => (least && least.max <= c.max ? least : c), undefined);
}

/** The JSON schema of every rule's own product term, by its name (the API's product body takes them). */
export const RULE_TERM_SCHEMAS: Record<string, Record<string, unknown>> = Object.fromEntries(
  PAYMENT_RULES.flatMap((r) => (r.term ? [[r.term.name, r.term.schema]] : [])),
);

/** A product's fields apart from the rules' own terms (set, not null), which the product keeps together. */
export function splitRuleTerms<T extends object>(fields: T): { own: T; ruleTerms: Record<string, unknown> } {
  const own: Record<string, unknown> = {};
  const ruleTerms: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(fields)) {
    if (!(k in RULE_TERM_SCHEMAS)) own[k] = v;
    else if (v !== null && v !== undefined) ruleTerms[k] = v;
  }
  return { own: own as T, ruleTerms };
}

/**
 * The first refusal of the rules that apply to this purchase's product, or null when every one lets
 * the payment stand. A refused payment is refunded, not sold: the claims the rules before took for
 * it go, so it counts against no limit.
 */
export async function judgePayment(db: Db, c: RuleCase): Promise<RuleRefusal | null> {
  for (const rule of PAYMENT_RULES) {
    if (!rule.appliesTo(c.terms)) continue;
    const refusal = await rule.judge(db, c);
    if (refusal) {
      await forgetClaims(db, c.purchaseId);
      return refusal;
    }
  }
  return null;
}

export type { PerPurchaseCap, PurchaseRule, RuleCase } from './rule';
