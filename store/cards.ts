import type { Db } from './db';
import { claimWithinLimit, type Claim } from './claims';

// Limits per payment card (`products.max_per_card`): what each card fingerprint has bought of a SKU.

export type CardClaim = Claim;

/**
 * Counts this purchase's units against what the card already bought of the SKU, once: `claimed`
 * (also when this purchase claimed before: a retried step), or `over_limit` when the card would pass
 * `maxPerCard`. One advisory lock per SKU and card, so two payments of the same card cannot both pass.
 */
export async function claimCard(
  db: Db,
  c: { purchaseId: string; sku: string; fingerprint: string; quantity: number; maxPerCard: number },
): Promise<CardClaim> {
  const { fingerprint, maxPerCard, ...rest } = c;
  return claimWithinLimit(db, 'card', { ...rest, key: fingerprint, max: maxPerCard });
}
