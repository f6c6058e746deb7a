import { claimWithinLimit } from '../claims';
import type { PurchaseRule } from './rule';

/** A refusal of a payment that carries no fingerprint to count: its lead, and the words that tell it from the others. */
const UNCOUNTABLE_LEAD = 'limit per payment method:';
const UNCOUNTABLE = 'payment cannot be counted against the limit';

// The limit per payment method (`maxPerCard`, kept as the term's name): units one card, bank account
// or other method may buy of a SKU, counted by the fingerprint Stripe gives whatever paid. A card
// is keyed by its bare fingerprint, as the claims recorded before (migration 009) are; any other
// method by `<type>:<fingerprint>`, so a card and a bank account never share a count. A method that
// carries no fingerprint (a Link payment, most wallets and buy-now-pay-later methods) cannot be told
// from the next one: it is never taken as within the limit, and its payment goes back.

/** The key a payment method is counted by; null when Stripe gave it no fingerprint. */
export function paymentMethodKey(method: { type: string; fingerprint?: string }): string | null {
  if (!method.fingerprint) return null;
  return method.type === 'card' ? method.fingerprint : `${method.type}:${method.fingerprint}`;
}

/**
 * The methods Stripe gives a fingerprint to, which Checkout offers a product with the limit: a card
 * (a wallet such as Apple Pay pays with one) and the bank debits. Link and most other methods carry
 * none, and are not offered.
 */
export const FINGERPRINTED_METHODS = [
  'card',
  'sepa_debit',
  'bacs_debit',
  'us_bank_account',
  'acss_debit',
  'au_becs_debit',
];

export const perPaymentMethod: PurchaseRule = {
  name: 'per_payment_method',
  appliesTo: (terms) => Boolean(terms.maxPerCard),
  inWords: (terms) =>
    `At most ${terms.maxPerCard} per card or bank account, counting earlier orders; pay by card or bank debit.`,
  perPurchase: (terms) => ({ max: terms.maxPerCard!, term: 'maxPerCard' }),
  checkoutMethods: () => FINGERPRINTED_METHODS,
  refusalInWords: (reason, p) => {
    const max = p.terms.maxPerCard;
    if (reason.startsWith(UNCOUNTABLE_LEAD) && reason.includes(UNCOUNTABLE)) {
      return `${p.name} is limited to ${max} per card or bank account, and the way you paid cannot be counted against that (pay by card or bank debit)`;
    }
    if (!/^limit per (card|payment method): /.test(reason)) return null;
    return `${p.name} is limited to ${max} per card or bank account, and the one you paid with had already bought that many`;
  },
  async judge(db, c) {
    const max = c.terms.maxPerCard!;
    const method = c.evidence.method;
    // Stripe named no method (a payment it could not describe): nothing to count, as before.
    if (!method) return null;
    const refusal = (why: string) => ({ rule: this.name, kind: 'refunded_card_limit', reason: why });
    const key = paymentMethodKey(method);
    if (!key) {
      return refusal(
        `${UNCOUNTABLE_LEAD} a ${method.type} ${UNCOUNTABLE} of ${c.sku} (${max} per card or bank account); pay by card or bank debit`,
      );
    }
    const claim = await claimWithinLimit(db, 'card', { ...c, key, max });
    if (claim === 'claimed') return null;
    const what = method.type === 'card' ? 'card' : 'payment method';
    return refusal(`limit per ${what}: this ${what} already bought the most of ${c.sku} one ${what} may (${max})`);
  },
};
