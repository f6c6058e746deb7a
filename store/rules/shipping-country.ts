import type { PurchaseRule } from './rule';

const escape = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** ISO country codes as names a buyer reads ("France, Germany"); a code Intl does not know stays as it is. */
function countryNames(codes: string[]): string {
  const names = new Intl.DisplayNames(['en'], { type: 'region' });
  return codes.map((c) => names.of(c.toUpperCase()) ?? c.toUpperCase()).join(', ');
}

// Where a product ships (`shippingCountries`): Checkout offers only those countries, so this rule
// prevents at the session (activities/checkout-session.ts) and here only refuses a payment whose
// collected address is somewhere else all the same.

export const shippingCountry: PurchaseRule = {
  name: 'shipping_country',
  appliesTo: (terms) => (terms.shippingCountries?.length ?? 0) > 0,
  inWords: (terms) => `Ships only to ${countryNames(terms.shippingCountries!)}.`,
  refusalInWords: (reason, p) => {
    const to = new RegExp(`^${escape(p.sku)} ships only to .*, not to ([A-Z]+)$`).exec(reason)?.[1];
    if (!to || !p.terms.shippingCountries) return null;
    return `${p.name} ships only to ${countryNames(p.terms.shippingCountries)}, not to ${countryNames([to])}`;
  },
  judge(_db, c) {
    const country = c.evidence.shippingCountry?.toUpperCase();
    const allowed = c.terms.shippingCountries!.map((x) => x.toUpperCase());
    if (!country || allowed.includes(country)) return Promise.resolve(null);
    return Promise.resolve({
      rule: this.name,
      kind: 'refunded_shipping_country',
      reason: `${c.sku} ships only to ${allowed.join(', ')}, not to ${country}`,
    });
  },
};
