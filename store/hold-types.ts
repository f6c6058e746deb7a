// The shape of a hold as the store returns it, the row it is read from, and how a buyer's active hold is found.

export type HoldStatus = 'active' | 'released' | 'expired' | 'sold' | 'restocked';

export interface Hold {
  purchaseId: string;
  sku: string;
  buyerId: string;
  quantity: number;
  bucket: number;
  oversold: number;
  unitIds: string[] | null;
  status: HoldStatus;
  expiresAt: string;
}

export type HoldResult =
  | { outcome: 'held'; hold: Hold }
  | { outcome: 'sold_out' }
  | { outcome: 'hold_exists'; heldBy: string }
  | { outcome: 'limit_exceeded'; limit: number; alreadyCommitted: number }
  | { outcome: 'unit_unavailable'; unitId: string }
  | { outcome: 'product_not_found' };

export interface HoldRow {
  purchase_id: string;
  sku: string;
  buyer_id: string;
  quantity: number;
  bucket: number;
  oversold: number;
  unit_ids: string[] | null;
  status: HoldStatus;
  expires_at: Date;
}

export function toHold(r: HoldRow): Hold {
  return {
    purchaseId: r.purchase_id,
    sku: r.sku,
    buyerId: r.buyer_id,
    quantity: r.quantity,
    bucket: r.bucket,
    oversold: r.oversold,
    unitIds: r.unit_ids,
    status: r.status,
    expiresAt: r.expires_at.toISOString(),
  };
}

/**
 * SQL (a scalar subquery): the purchase, other than `except` if given, whose active hold holds `sku`
 * for `buyer` now, else NULL. Read among the buyer's holds of the SKU (`holds_buyer`, a row or two):
 * asked for `status = 'active'` alone, Postgres took the SKU's index of active holds and read every
 * one of them for each buyer (600 a lookup at the peak of a 600-unit drop).
 */
export const activeHoldSql = (sku: string, buyer: string, except?: string): string =>
  `(SELECT max(h.purchase_id) FILTER (WHERE h.status = 'active') FROM holds h
     WHERE h.sku = ${sku} AND h.buyer_id = ${buyer} AND h.status IN ('active', 'sold')${except ? ` AND h.purchase_id <> ${except}` : ''})`;

/**
 * SQL: when the units of an active hold ending at `expiresAt` can be had again: its end while it runs,
 * else its end plus the product's grace `grace` (an interval), for a payment may still land in it.
 */
export const backAtSql = (expiresAt: string, grace: string): string =>
  `CASE WHEN ${expiresAt} > now() THEN ${expiresAt} ELSE ${expiresAt} + ${grace} END`;
