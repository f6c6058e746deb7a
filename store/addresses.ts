import { createHash } from 'node:crypto';
import type { Db } from './db';
import { claimWithinLimit, type Claim } from './claims';

// Limits per shipping address (`products.max_per_address`): the address Checkout collected, reduced
// to a key so that one address written a few ways counts as one. The rule is docs/architecture.md's
// ("The per-address limit"); test/store/addresses.test.ts holds it to its examples.

/** A postal address as Stripe reports it (`collected_information.shipping_details.address`). */
export interface PostalAddress {
  line1?: string | null;
  line2?: string | null;
  city?: string | null;
  postal_code?: string | null;
  state?: string | null;
  country?: string | null;
}

/** Letters and digits only, in lower case, words separated by one space; accents dropped (é → e, ß stays). */
export function normaliseText(s: string | null | undefined): string {
  return (s ?? '')
    .normalize('NFKD')
    .replace(/\p{M}+/gu, '')
    .toLowerCase()
    .replace(/[^\p{L}\p{N}]+/gu, ' ')
    .trim();
}

/**
 * The normalised form of an address, before it is hashed: the country (ISO code, upper case), the
 * postal code (upper case, without spaces, hyphens or dots), and the street lines (line1 and line2
 * joined, normalised by `normaliseText`). With a postal code the city and state are left out: the
 * code already names them, and "NYC" or "CA" next to "New York" or "California" would otherwise
 * count as another address. Without one (countries that have none) the city and state are kept.
 * The name on the parcel is never part of it: a new name per order is what the limit is against.
 */
export function normaliseAddress(a: PostalAddress): string {
  const country = (a.country ?? '').trim().toUpperCase();
  const postal = (a.postal_code ?? '').toUpperCase().replace(/[\s.-]+/g, '');
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
