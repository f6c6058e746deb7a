import test from 'ava';
import { uniqueSku } from '../helpers/db';
import { ADMIN_TOKEN, sessionOf, startSystem, type System } from '../helpers/system';

// Stripe charges at most 99,999,999 in the smallest unit of a currency: a product whose largest
// order (priceCents × maxPerBuyer) is more than that is refused when it is created.

let sys: System;
test.before(async () => {
  sys = await startSystem();
});
test.after.always(async () => {
  await sys?.close();
});

function create(fields: Record<string, unknown>) {
  const sku = uniqueSku('limit');
  const body = { sku, name: 'Gold bar', currency: 'usd', stock: 30, ...fields };
  return sys
    .api('POST', '/v1/products', body, { authorization: `Bearer ${ADMIN_TOKEN}` })
    .then((res) => ({ sku, res }));
}

test('a product whose largest order Stripe cannot charge is refused with 400 naming priceCents, and nothing is written', async (t) => {
  const { sku, res } = await create({ priceCents: 99_999_999, maxPerBuyer: 22 });
  t.is(res.status, 400);
  t.regex(res.headers.get('content-type') ?? '', /^application\/problem\+json/);
  t.is(res.body.type, 'invalid-request');
  t.deepEqual(
    res.body.errors.map((e: { field: string }) => e.field),
    ['priceCents'],
  );
  t.regex(res.body.errors[0].message, /99999999 × maxPerBuyer 22 = 2199999978 exceeds 99999999/);
  t.regex(res.body.detail, /^priceCents: /);
  t.is((await sys.api('GET', `/v1/products/${sku}`)).status, 404);
  const { rows } = await sys.db.query('SELECT count(*)::int AS n FROM stock_movements WHERE sku = $1', [sku]);
  t.is(rows[0].n, 0);
});

test('one cent more than the largest charge is refused, the largest charge itself is accepted', async (t) => {
  // 33,333,333 × 3 = 99,999,999; 33,333,334 × 3 = 100,000,002.
  const over = await create({ priceCents: 33_333_334, maxPerBuyer: 3 });
  t.is(over.res.status, 400);
  t.is(over.res.body.errors[0].field, 'priceCents');
  const at = await create({ priceCents: 33_333_333, maxPerBuyer: 3 });
  t.is(at.res.status, 201, JSON.stringify(at.res.body));
  t.like(at.res.body, { priceCents: 33_333_333, maxPerBuyer: 3 });
  // The default per-buyer limit is 1: the largest unit price is the largest charge.
  const single = await create({ priceCents: 99_999_999 });
  t.is(single.res.status, 201, JSON.stringify(single.res.body));
});

test('the largest order a product allows opens a session and reads back as the exact amount', async (t) => {
  const { sku, res } = await create({ priceCents: 33_333_333, maxPerBuyer: 3 });
  t.is(res.status, 201);
  const bought = await sys.buy(sku, 'whale', { quantity: 3 });
  t.is(bought.status, 201, JSON.stringify(bought.body));
  t.is(bought.body.amountCents, 99_999_999);
  t.truthy(await sessionOf(sys.db, bought.body.purchaseId));
  const got = await sys.purchase(bought.body.purchaseId);
  t.is(got.body.amountCents, 99_999_999);
});

test('the limit per payment method is set as maxPerPaymentMethod or by its old name maxPerCard, and read under both', async (t) => {
  const named = await create({ priceCents: 100, maxPerPaymentMethod: 2 });
  t.is(named.res.status, 201, JSON.stringify(named.res.body));
  t.like(await sys.stock(named.sku), { maxPerPaymentMethod: 2, maxPerCard: 2 });
  const old = await create({ priceCents: 100, maxPerCard: 3 });
  t.is(old.res.status, 201, JSON.stringify(old.res.body));
  t.like(await sys.stock(old.sku), { maxPerPaymentMethod: 3, maxPerCard: 3 });
  const both = await create({ priceCents: 100, maxPerPaymentMethod: 2, maxPerCard: 2 });
  t.is(both.res.status, 201);
  const differ = await create({ priceCents: 100, maxPerPaymentMethod: 2, maxPerCard: 3 });
  t.is(differ.res.status, 400);
  t.deepEqual(
    differ.res.body.errors.map((e: { field: string }) => e.field),
    ['maxPerPaymentMethod'],
  );
  t.is((await sys.api('GET', `/v1/products/${differ.sku}`)).status, 404);
});

test("a rule's own term (acceptedPaymentMethods) is taken on create, checked by the rule's schema, and read back", async (t) => {
  const named = await create({ priceCents: 100, acceptedPaymentMethods: ['card', 'sepa_debit'] });
  t.is(named.res.status, 201, JSON.stringify(named.res.body));
  t.deepEqual((await sys.stock(named.sku)).acceptedPaymentMethods, ['card', 'sepa_debit']);
  const { rows } = await sys.db.query('SELECT rule_terms FROM products WHERE sku = $1', [named.sku]);
  t.deepEqual(rows[0].rule_terms, { acceptedPaymentMethods: ['card', 'sepa_debit'] });
  const none = await create({ priceCents: 100 });
  t.false('acceptedPaymentMethods' in (await sys.stock(none.sku)));
  // A type Stripe does not have (Apple Pay is a card payment) would have every live session refused.
  for (const bad of [[], ['Card!'], 'card', ['card', 'card'], ['card', 'apple_pay']]) {
    const refused = await create({ priceCents: 100, acceptedPaymentMethods: bad });
    t.is(refused.res.status, 400, JSON.stringify(bad));
    t.regex(refused.res.body.errors[0].field, /^acceptedPaymentMethods/);
    t.is((await sys.api('GET', `/v1/products/${refused.sku}`)).status, 404);
  }
  const wallet = await create({ priceCents: 100, acceptedPaymentMethods: ['apple_pay'] });
  t.like(wallet.res.body.errors[0], { field: 'acceptedPaymentMethods.0' });
  t.regex(wallet.res.body.errors[0].message, /^must be one of acss_debit, .*\bcard\b.*\bsepa_debit\b/);
});
