import test from 'ava';
import { claimCard } from '../../store/cards';
import { convertHold, releaseHold, retakeForLatePayment, takeHold } from '../../store/holds';
import { createProduct, type NewProduct } from '../../store/products';
import { assertInvariants, testDb, uniqueSku } from '../helpers/db';

// maxPerBuyer at the sale, in the store: a late payment's re-take and a hold's sale count the buyer's
// other sales (and their hold while it lasts). Refused, a hold still active goes back to stock in the
// same transaction (so a saga of any version only has to refund), and the purchase's card claim goes.

const db = testDb(10);
test.after.always(() => db.end());

function product(overrides: Partial<NewProduct> = {}): NewProduct {
  return { sku: uniqueSku(), name: 'Sneaker 42', priceCents: 12_000, currency: 'eur', stock: 5, ...overrides };
}

/** A buyer with a sale of `sku` and another hold of it (maxPerBuyer 2), then a limit of 1: the hold's id. */
async function soldAndHeldPastLimit(sku: string, buyerId: string): Promise<string> {
  await takeHold(db, { purchaseId: `${sku}-sold`, sku, buyerId, quantity: 1 });
  if ((await convertHold(db, `${sku}-sold`)).outcome !== 'sold') throw new Error('the first sale did not sell');
  await takeHold(db, { purchaseId: `${sku}-b`, sku, buyerId, quantity: 1 });
  await db.query('UPDATE products SET max_per_buyer = 1 WHERE sku = $1', [sku]);
  return `${sku}-b`;
}

async function statusOf(purchaseId: string): Promise<string> {
  return (await db.query('SELECT status FROM holds WHERE purchase_id = $1', [purchaseId])).rows[0].status;
}

async function claimsOf(purchaseId: string): Promise<number> {
  return (await db.query('SELECT count(*)::int AS n FROM card_claims WHERE purchase_id = $1', [purchaseId])).rows[0].n;
}

test('a sale past maxPerBuyer is refused: the hold goes back to stock and its card claim goes', async (t) => {
  const p = await createProduct(db, product({ maxPerBuyer: 2 }));
  const id = await soldAndHeldPastLimit(p.sku, 'ann');
  t.is(
    await claimCard(db, { purchaseId: id, sku: p.sku, fingerprint: 'fp-ann', quantity: 1, maxPerCard: 5 }),
    'claimed',
  );
  t.like(await convertHold(db, id), { outcome: 'limit_exceeded' });
  t.is(await statusOf(id), 'released');
  t.is(await claimsOf(id), 0);
  await assertInvariants(t, db, p.sku);
});

test('a late payment of a hold still active, past maxPerBuyer, is refused and its hold goes back', async (t) => {
  const p = await createProduct(db, product({ maxPerBuyer: 2 }));
  const id = await soldAndHeldPastLimit(p.sku, 'ben');
  t.like(await retakeForLatePayment(db, id), { outcome: 'limit_exceeded', limit: 1, alreadyCommitted: 1 });
  t.is(await statusOf(id), 'released');
  await assertInvariants(t, db, p.sku);
});

test("a late payment is not refused for the buyer's other hold once that hold lapsed past its grace, swept or not", async (t) => {
  const p = await createProduct(db, product({ maxPerBuyer: 1 }));
  const late = `${p.sku}-late`;
  const abandoned = `${p.sku}-abandoned`;
  await takeHold(db, { purchaseId: late, sku: p.sku, buyerId: 'cat', quantity: 1 });
  await releaseHold(db, late, 'expire');
  await takeHold(db, { purchaseId: abandoned, sku: p.sku, buyerId: 'cat', quantity: 1 });
  // The other hold lapses past its grace, and no sweeper has run.
  await db.query(`UPDATE holds SET expires_at = now() - interval '1 hour' WHERE purchase_id = $1`, [abandoned]);
  t.like(await retakeForLatePayment(db, late), { outcome: 'sold' });
  t.is(await statusOf(abandoned), 'expired', 'the re-take reclaimed it');
  await assertInvariants(t, db, p.sku);
});

test('within the limit, a second sale of the buyer sells', async (t) => {
  const p = await createProduct(db, product({ maxPerBuyer: 2 }));
  await takeHold(db, { purchaseId: `${p.sku}-a`, sku: p.sku, buyerId: 'dan', quantity: 1 });
  t.like(await convertHold(db, `${p.sku}-a`), { outcome: 'sold' });
  await takeHold(db, { purchaseId: `${p.sku}-b`, sku: p.sku, buyerId: 'dan', quantity: 1 });
  t.like(await convertHold(db, `${p.sku}-b`), { outcome: 'sold' });
  await assertInvariants(t, db, p.sku);
});
