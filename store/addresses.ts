import { createHash } from 'node:crypto';
import type { Db } from './db';
import { foldText } from './address-text';
import { claimWithinLimit, type Claim } from './claims';
import { normalisePostalCode } from './postal-codes';

// Limits per shipping address (`products.max_per_address`): the address Checkout collected, reduced
// to a key so that one address written many ways counts as one, and two addresses stay two. The rule
// is docs/rules.md's ("The per-address limit"); test/fast/store/addresses.test.ts holds it to its
// table of spellings and neighbours.

/** A postal address as Stripe reports it (`collected_information.shipping_details.address`). */
export interface PostalAddress {
  line1?: string | null;
  line2?: string | null;
  city?: string | null;
  postal_code?: string | null;
  state?: string | null;
  country?: string | null;
}

/**
 * A street line, city or state as the key compares it: folded (store/address-text.ts: NFKC, accents
 * and invisible characters dropped, digits of any script as ASCII, lookalike letters as Latin, case
 * folded), then letters and digits only. Spacing and punctuation are dropped, except that two numbers
 * stay apart (`Unit 1, 23` is not `Unit 12, 3`), and each number loses its leading zeros (`Apt 04` is
 * `Apt 4`): `12, Rue-de-la-Paix.` and `12 rue de la paix` are both `12ruedelapaix`.
 */
export function normaliseText(s: string | null | undefined): string {
  let out = '';
  for (const word of foldText(s ?? '').split(/[^\p{L}\p{N}]+/u)) {
    if (/\d$/.test(out) && /^\d/.test(word)) out += ' ';
    out += word;
  }
  return out.replace(/\d+/g, (n) => n.replace(/^0+(?=\d)/, ''));
}

/**
 * The normalised form of an address, before it is hashed: the country (ISO code, upper case), the
 * postal code (folded like the street, then by the country's format: store/postal-codes.ts), and the
 * street lines (line1 and line2 joined, normalised by `normaliseText`). With a postal code the city
 * and state are left out: the code already names them, and "NYC" or "CA" next to "New York" or
 * "California" would otherwise count as another address. Without one (countries that have none) the
 * city and state are kept. The name on the parcel is never part of it: a new name per order is what
 * the limit is against.
 */
export function normaliseAddress(a: PostalAddress): string {
  const country = foldText(a.country ?? '')
    .replace(/[^a-z]+/g, '')
    .toUpperCase();
  const written = foldText(a.postal_code ?? '')
    .replace(/[^\p{L}\p{N}]+/gu, '')
    .toUpperCase();
  const postal = written ? normalisePostalCode(country, written) : '';
  const street = normaliseText(`${a.line1 ?? ''} ${a.line2 ?? ''}`);
  const place = postal ? '' : `${normaliseText(a.city)}|${normaliseText(a.state)}`;
  return [country, postal, place, street].join('|');
}

/** The key an address is counted by: the SHA-256 of its normalised form, so the claims table holds no address. */
export function addressKey(a: PostalAddress): string {
  return createHash('sha256').update(normaliseAddress(a)).digest('hex');
}

/**
 * Counts this purchase's units against what the address (its key) already bought of the SKU, once:
 * `claimed` (also on a retried step) or `over_limit` when it would pass `maxPerAddress`.
 */
export async function claimAddress(
  db: Db,
  c: { purchaseId: string; sku: string; addressKey: string; quantity: number; maxPerAddress: number },
): Promise<Claim> {
  const { addressKey: key, maxPerAddress, ...rest } = c;
  return claimWithinLimit(db, 'address', { ...rest, key, max: maxPerAddress });
}
