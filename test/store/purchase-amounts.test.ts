import { randomUUID } from 'node:crypto';
import test from 'ava';
import { openPurchase } from '../../store/open-purchase';
import { getPurchase, purchaseIdFor, recordPurchase } from '../../store/purchases';
import { testDb, uniqueSku } from '../helpers/db';

const db = testDb(2);
test.after.always(() => db.end());

test('an order total above 2^31 cents is stored and read back as the same number', async (t) => {
  const key = randomUUID();
  await openPurchase(db, key, { sku: uniqueSku('amount'), buyerId: 'a', quantity: 1 });
  const id = purchaseIdFor(key, 'a');
  // More than an integer column holds: amount_cents is a bigint, which node-postgres reads as a string.
  await recordPurchase(db, id, { amountCents: 2_199_999_978, currency: 'usd' });
  const record = await getPurchase(db, id);
  t.is(record?.amountCents, 2_199_999_978);
  t.is(typeof record?.amountCents, 'number');
});

test('a purchase without an amount yet reads back without one', async (t) => {
  const key = randomUUID();
  await openPurchase(db, key, { sku: uniqueSku('amount'), buyerId: 'a', quantity: 1 });
  t.is((await getPurchase(db, purchaseIdFor(key, 'a')))?.amountCents, undefined);
});
