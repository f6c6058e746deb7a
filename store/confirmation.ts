import type { Db } from './db';
import type { PostalAddress } from './addresses';
import { getProduct } from './products';
import { getPurchase, notifyBuyer } from './purchases';

// What a confirmed purchase tells its buyer (migration 033): when it was confirmed and where it
// ships, on the purchase page and in the confirmation notice (one per purchase: notification kind
// `confirmed`, whether the sale was in time or late).

/** The notification kind of a purchase's confirmation: one per purchase (notifications are unique per kind). */
export const CONFIRMED_NOTICE = 'confirmed';

/** Where a purchase ships: the name and postal address Checkout collected. */
export interface Shipping {
  name?: string;
  address: PostalAddress;
}

/** A confirmed purchase's own facts, beside its record. */
export interface Confirmation {
  /** When the record first read confirmed (or late_confirmed); absent before. */
  confirmedAt?: string;
  shipping?: Shipping;
}

/** Keeps where a purchase ships (from its webhook, or read from Stripe at confirmation); the same address again is the same row. */
export async function recordShipping(db: Db, purchaseId: string, shipping: Shipping): Promise<void> {
  await db.query('UPDATE purchases SET shipping_name = $2, shipping_address = $3 WHERE purchase_id = $1', [
    purchaseId,
    shipping.name ?? null,
    JSON.stringify(shipping.address),
  ]);
}

/** Whether the purchase already knows where it ships (its webhook kept it, or an earlier read). */
export async function hasShipping(db: Db, purchaseId: string): Promise<boolean> {
  const { rows } = await db.query<{ known: boolean }>(
    'SELECT shipping_address IS NOT NULL AS known FROM purchases WHERE purchase_id = $1',
    [purchaseId],
  );
  return rows[0]?.known ?? false;
}

/** A purchase's confirmation facts, as far as they are known (nothing for a purchase that does not exist). */
export async function confirmationOf(db: Db, purchaseId: string): Promise<Confirmation> {
  const { rows } = await db.query<{
    confirmed_at: Date | null;
    shipping_name: string | null;
    shipping_address: PostalAddress | null;
  }>('SELECT confirmed_at, shipping_name, shipping_address FROM purchases WHERE purchase_id = $1', [purchaseId]);
  const r = rows[0];
  if (!r) return {};
  return {
    ...(r.confirmed_at ? { confirmedAt: r.confirmed_at.toISOString() } : {}),
    ...(r.shipping_address
      ? { shipping: { ...(r.shipping_name ? { name: r.shipping_name } : {}), address: r.shipping_address } }
      : {}),
  };
}

/** An address as a parcel's label reads it, one line each: name, street lines, postal code and city, state, country. */
export function shippingLines(s: Shipping): string[] {
  const a = s.address;
  const town = [a.postal_code, a.city].filter(Boolean).join(' ');
  return [s.name, a.line1, a.line2, town, a.state, a.country].filter((l): l is string => Boolean(l && l.trim()));
}

/** The confirmation notice's words, from the purchase's record: what was bought, for how much, when, where it goes. */
export function confirmationWords(o: {
  productName: string;
  quantity: number;
  amount?: string;
  /** When it was confirmed, in words. */
  when?: string;
  shipping?: Shipping;
  receiptUrl: string;
}): string {
  const what = `${o.quantity} × ${o.productName}${o.amount ? `, ${o.amount}` : ''}`;
  const when = o.when ? ` on ${o.when}` : '';
  const where = o.shipping ? ` It ships to ${shippingLines(o.shipping).join(', ')}.` : '';
  return `Your purchase is confirmed: ${what}, paid${when}.${where} Your receipt: ${o.receiptUrl}`;
}

/** How the notice writes money and moments (the pages' own words: web/money.ts, web/time.ts). */
export interface NoticeFormats {
  money(cents: number, currency: string): string;
  time(iso: string): string;
}

/**
 * Writes purchase `purchaseId`'s confirmation notice, once (a repeat finds the first: the same id), and
 * returns its id; null when the record is not confirmed (nothing to tell). `receiptUrl` is the
 * purchase page.
 */
export async function noteConfirmation(
  db: Db,
  purchaseId: string,
  receiptUrl: string,
  format: NoticeFormats,
): Promise<string | null> {
  const p = await getPurchase(db, purchaseId);
  if (!p || (p.status !== 'confirmed' && p.status !== 'late_confirmed')) return null;
  const [product, c] = await Promise.all([getProduct(db, p.sku), confirmationOf(db, purchaseId)]);
  const message = confirmationWords({
    productName: product?.name ?? p.sku,
    quantity: p.quantity,
    ...(p.amountCents !== undefined && p.currency ? { amount: format.money(p.amountCents, p.currency) } : {}),
    ...(c.confirmedAt ? { when: format.time(c.confirmedAt) } : {}),
    ...(c.shipping ? { shipping: c.shipping } : {}),
    receiptUrl,
  });
  return notifyBuyer(db, purchaseId, p.buyerId, CONFIRMED_NOTICE, message);
}
