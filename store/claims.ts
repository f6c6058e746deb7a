import { withTx, type Db, type Queryable } from './db';

// Limits per payment card (`products.max_per_card`, migration 009) and per shipping address
// (`products.max_per_address`, migration 015): what each card fingerprint, or address key, has bought
// of a SKU, one row per purchase.

export type Claim = 'claimed' | 'over_limit';

// `lock`: the advisory lock's second key; a card's is its fingerprint as before 015, so workers of
// either version lock the same card alike during a rollout.
const KINDS = {
  card: { table: 'card_claims', column: 'fingerprint', record: 'card_fingerprint', lock: '' },
  address: { table: 'address_claims', column: 'address_key', record: 'address_key', lock: 'address:' },
} as const;

/**
 * Counts this purchase's units against what the card (or address) already bought of the SKU, once:
 * `claimed` (also when this purchase claimed before: a retried step), or `over_limit` when it would
 * pass `max`. One advisory lock per SKU and key, so two payments of one card or address cannot both pass.
 */
export async function claimWithinLimit(
  db: Db,
  kind: keyof typeof KINDS,
  c: { purchaseId: string; sku: string; key: string; quantity: number; max: number },
): Promise<Claim> {
  const { table, column, record, lock } = KINDS[kind];
  return withTx(db, async (tx) => {
    await tx.query('SELECT pg_advisory_xact_lock(hashtext($1), hashtext($2))', [c.sku, lock + c.key]);
    const { rows } = await tx.query<{ mine: boolean; bought: number }>(
      `SELECT coalesce(bool_or(purchase_id = $3), false) AS mine,
              coalesce(sum(quantity) FILTER (WHERE purchase_id <> $3), 0)::int AS bought
         FROM ${table} WHERE sku = $1 AND ${column} = $2`,
      [c.sku, c.key, c.purchaseId],
    );
    if (rows[0].mine) return 'claimed';
    if (rows[0].bought + c.quantity > c.max) return 'over_limit';
    await tx.query(
      `INSERT INTO ${table} (purchase_id, sku, ${column}, quantity) VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING`,
      [c.purchaseId, c.sku, c.key, c.quantity],
    );
    await tx.query(`UPDATE purchases SET ${record} = $2 WHERE purchase_id = $1`, [c.purchaseId, c.key]);
    return 'claimed';
  });
}

/** A payment that is refunded, not sold, counts against no card or address limit: its claims go. */
export async function forgetClaims(db: Queryable, purchaseId: string): Promise<void> {
  await db.query('DELETE FROM card_claims WHERE purchase_id = $1', [purchaseId]);
  await db.query('DELETE FROM address_claims WHERE purchase_id = $1', [purchaseId]);
}
