import { withTx, type Db } from './db';

// Limits per payment card (`products.max_per_card`): what each card fingerprint has bought of a SKU.

export type CardClaim = 'claimed' | 'over_limit';

/**
 * Counts this purchase's units against what the card already bought of the SKU, once: `claimed`
 * (also when this purchase claimed before: a retried step), or `over_limit` when the card would pass
 * `maxPerCard`. One advisory lock per SKU and card, so two payments of the same card cannot both pass.
 */
export async function claimCard(
  db: Db,
  c: { purchaseId: string; sku: string; fingerprint: string; quantity: number; maxPerCard: number },
): Promise<CardClaim> {
  return withTx(db, async (tx) => {
    await tx.query('SELECT pg_advisory_xact_lock(hashtext($1), hashtext($2))', [c.sku, c.fingerprint]);
    const { rows } = await tx.query<{ mine: boolean; bought: number }>(
      `SELECT coalesce(bool_or(purchase_id = $3), false) AS mine,
              coalesce(sum(quantity) FILTER (WHERE purchase_id <> $3), 0)::int AS bought
         FROM card_claims WHERE sku = $1 AND fingerprint = $2`,
      [c.sku, c.fingerprint, c.purchaseId],
    );
    if (rows[0].mine) return 'claimed';
    if (rows[0].bought + c.quantity > c.maxPerCard) return 'over_limit';
    await tx.query(
      'INSERT INTO card_claims (purchase_id, sku, fingerprint, quantity) VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING',
      [c.purchaseId, c.sku, c.fingerprint, c.quantity],
    );
    await tx.query('UPDATE purchases SET card_fingerprint = $2 WHERE purchase_id = $1', [c.purchaseId, c.fingerprint]);
    return 'claimed';
  });
}
