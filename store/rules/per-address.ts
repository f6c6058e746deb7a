import { claimWithinLimit } from '../claims';
import type { PurchaseRule } from './rule';

const LEAD = 'limit per address:';

// The limit per shipping address (`maxPerAddress`): units one address may buy of a SKU, counted by
// the key of the address Checkout collected (store/addresses.ts). No address collected: nothing to
// count.

export const perAddress: PurchaseRule = {
  name: 'per_address',
  appliesTo: (terms) => Boolean(terms.maxPerAddress),
  inWords: (terms) => `At most ${terms.maxPerAddress} per shipping address, counting earlier orders.`,
  perPurchase: (terms) => ({ max: terms.maxPerAddress!, term: 'maxPerAddress' }),
  refusalInWords: (reason, p) =>
    reason.startsWith(LEAD)
      ? `${p.name} is limited to ${p.terms.maxPerAddress} per shipping address, and the address you gave had already bought that many`
      : null,
  async judge(db, c) {
    const max = c.terms.maxPerAddress!;
    const key = c.evidence.addressKey;
    if (!key) return null;
    if ((await claimWithinLimit(db, 'address', { ...c, key, max })) === 'claimed') return null;
    return {
      rule: this.name,
      kind: 'refunded_address_limit',
      reason: `${LEAD} this shipping address already bought the most of ${c.sku} one address may (${max})`,
    };
  },
};
