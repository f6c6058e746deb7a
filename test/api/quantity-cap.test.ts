import { randomUUID } from 'node:crypto';
import test from 'ava';
import { purchaseIdFor } from '../../store/purchases';
import { purchaseWorkflowId } from '../../vocabulary';
import { buyerToken, startSystem, type System } from '../helpers/system';

// The quantity a purchase may ask for (issue 32): one purchase ships to one address and is paid by
// one method, so a quantity over the product's limit per address or per payment method (or over its
// per-buyer limit) is refused with 422 `limit-exceeded` naming the limit, before anything is written:
// no purchase, no hold, no saga. Never a 500, on the JSON API or the Buy form.

let sys: System;
test.before(async () => {
  sys = await startSystem();
});
test.after.always(async () => {
  await sys?.close();
});

/** Nothing of a refused request is left: no purchase row, no saga, the stock as it was. */
async function nothingWritten(t: import('ava').ExecutionContext, sku: string, buyer: string, key: string) {
  const { rows } = await sys.db.query('SELECT count(*)::int AS n FROM purchases WHERE buyer_id = $1', [buyer]);
  t.is(rows[0].n, 0, 'no purchase recorded');
  await t.throwsAsync(sys.temporal.workflow.getHandle(purchaseWorkflowId(purchaseIdFor(key, buyer))).describe(), {
    message: /not found/i,
  });
  t.like(await sys.stock(sku), { available: 5, held: 0, sold: 0 });
}

test('more than one address may take is 422 limit-exceeded naming maxPerAddress and its most, and nothing is written', async (t) => {
  const sku = await sys.createProduct({ stock: 5, maxPerBuyer: 3, maxPerAddress: 1, shippingCountries: ['FR'] });
  const key = randomUUID();
  const res = await sys.buy(sku, 'cap-ann', { quantity: 2 }, key);
  t.is(res.status, 422, JSON.stringify(res.body));
  t.regex(res.headers.get('content-type') ?? '', /^application\/problem\+json/);
  t.like(res.body, { type: 'limit-exceeded', status: 422, limit: 'maxPerAddress', maxQuantity: 1 });
  t.regex(res.body.detail, /quantity 2 is more than one purchase of .+ may take: at most 1 \(maxPerAddress\)/);
  await nothingWritten(t, sku, 'cap-ann', key);
  // Within the cap the same buyer buys.
  t.is((await sys.buy(sku, 'cap-ann', { quantity: 1 })).status, 201);
});

test('the smallest cap wins: maxPerCard under maxPerAddress and maxPerBuyer', async (t) => {
  const sku = await sys.createProduct({
    stock: 5,
    maxPerBuyer: 4,
    maxPerCard: 2,
    maxPerAddress: 3,
    shippingCountries: ['FR'],
  });
  const key = randomUUID();
  const res = await sys.buy(sku, 'cap-ben', { quantity: 3 }, key);
  t.is(res.status, 422, JSON.stringify(res.body));
  t.like(res.body, { type: 'limit-exceeded', limit: 'maxPerCard', maxQuantity: 2 });
  await nothingWritten(t, sku, 'cap-ben', key);
  t.is((await sys.buy(sku, 'cap-ben', { quantity: 2 })).status, 201);
});

test('more than one buyer may buy names maxPerBuyer; a quantity no product allows is 400 naming the field', async (t) => {
  const sku = await sys.createProduct({ stock: 5, maxPerBuyer: 2 });
  const key = randomUUID();
  const res = await sys.buy(sku, 'cap-cy', { quantity: 3 }, key);
  t.is(res.status, 422, JSON.stringify(res.body));
  t.like(res.body, { type: 'limit-exceeded', limit: 'maxPerBuyer', maxQuantity: 2 });
  t.regex(res.body.detail, /at most 2 of .+ per buyer \(maxPerBuyer\)/);
  for (const quantity of [1001, 0, 2.5, '2', -1]) {
    const bad = await sys.buy(sku, 'cap-cy', { quantity }, key);
    t.is(bad.status, 400, `${JSON.stringify(quantity)}: ${JSON.stringify(bad.body)}`);
    t.is(bad.body.type, 'invalid-request');
    t.deepEqual(
      bad.body.errors.map((e: { field: string }) => e.field),
      ['quantity'],
    );
  }
  await nothingWritten(t, sku, 'cap-cy', key);
});

test('the Buy form asked for more than one address may take answers a page in words naming the limit, buying nothing', async (t) => {
  const sku = await sys.createProduct({ stock: 5, maxPerBuyer: 3, maxPerAddress: 1, shippingCountries: ['FR'] });
  const key = randomUUID();
  const res = await fetch(`${sys.apiUrl}/p/${sku}/buy`, {
    method: 'POST',
    headers: {
      'content-type': 'application/x-www-form-urlencoded',
      origin: sys.apiUrl,
      cookie: `buyer_token=${await buyerToken('cap-dee')}`,
    },
    body: new URLSearchParams({ idempotencyKey: key, quantity: '2' }).toString(),
    redirect: 'manual',
  });
  t.is(res.status, 422);
  t.regex(res.headers.get('content-type') ?? '', /^text\/html/);
  const text = (await res.text()).replace(/\s+/g, ' ');
  t.regex(text, /That is more than you may buy/);
  t.regex(
    text,
    /One purchase of this product may take at most 1: it is limited to 1 per shipping address\. Choose 1\./,
  );
  t.regex(text, new RegExp(`href="/p/${sku}"`), 'a way back to the product');
  await nothingWritten(t, sku, 'cap-dee', key);
});
