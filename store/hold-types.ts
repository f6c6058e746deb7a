// The shape of a hold as the store returns it, and the row it is read from.

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
