import type { Tx } from './db';

// The append-only movement log (`stock_movements`): every change of stock writes one row here in the
// same transaction, so `reconcile` can recompute every counter from it.

export type MovementKind = 'create' | 'restock' | 'hold' | 'release' | 'expire' | 'sell' | 'retake' | 'refund_restock';

export interface Movement {
  sku: string;
  purchaseId: string | null;
  kind: MovementKind;
  total?: number;
  available?: number;
  held?: number;
  sold?: number;
  oversold?: number;
}

export async function appendMovements(tx: Tx, movements: Movement[]): Promise<void> {
  if (movements.length === 0) return;
  await tx.query(
    `INSERT INTO stock_movements (sku, purchase_id, kind, total_delta, available_delta, held_delta, sold_delta, oversold_delta)
     SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::int[], $5::int[], $6::int[], $7::int[], $8::int[])`,
    [
      movements.map((m) => m.sku),
      movements.map((m) => m.purchaseId),
      movements.map((m) => m.kind),
      movements.map((m) => m.total ?? 0),
      movements.map((m) => m.available ?? 0),
      movements.map((m) => m.held ?? 0),
      movements.map((m) => m.sold ?? 0),
      movements.map((m) => m.oversold ?? 0),
    ],
  );
}
