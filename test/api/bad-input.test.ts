import { randomUUID } from 'node:crypto';
import test from 'ava';
import Stripe from 'stripe';
import { MAX_TOTAL } from '../../store/products';
import { assertInvariants, uniqueSku } from '../helpers/db';
import {
  ADMIN_TOKEN,
  asBuyer,
  sessionOf,
  startSystem,
  SUPPORT_TOKEN,
  WEBHOOK_SECRET,
  type System,
} from '../helpers/system';
import { sendRaw, type RawResponse } from './raw-http';
import { countWrites, type WriteCounter } from './write-counter';

// The inputs that used to answer 500 (or worse), each answered now as a problem, with nothing
// written: NUL and invalid UTF-8 in path parameters, lone surrogates and NUL in JSON strings,
// 20,000-deep nesting, totals past what the column holds, methods nobody implements, and the
// largest product a user may create (100,000 seats) next to a body just beyond the limit.

let sys: System;
let writes: WriteCounter;
const admin = { authorization: `Bearer ${ADMIN_TOKEN}` };
const support = { authorization: `Bearer ${SUPPORT_TOKEN}` };

test.before(async () => {
  sys = await startSystem();
  writes = countWrites(sys.db, sys.temporal);
});
test.after.always(async () => {
  await sys?.close();
});

/** A request as raw bytes (the path exactly as given), with its JSON body and headers. */
function send(method: string, path: string, body?: string, headers: Record<string, string> = {}) {
  return sendRaw(sys.apiUrl, {
    method,
    path,
    headers: [
      ...(body !== undefined ? [['Content-Type', 'application/json'] as [string, string]] : []),
      ...Object.entries(headers),
    ],
    body: body === undefined ? undefined : Buffer.from(body),
  });
}

function problem(res: RawResponse): { type: string; status: number; errors?: { field: string; message: string }[] } {
  if (!/^application\/problem\+json/.test(res.headers['content-type'] ?? '')) {
    throw new Error(`not a problem: ${res.status} ${res.headers['content-type']} ${res.text.slice(0, 200)}`);
  }
  return res.json as never;
}

const fields = (res: RawResponse) => problem(res).errors?.map((e) => e.field);

/** POST /v1/products as the admin: a product of one unit at 45.00 EUR with a SKU of its own, changed by `terms`. */
const postProduct = (terms: Record<string, unknown>) =>
  send(
    'POST',
    '/v1/products',
    JSON.stringify({
      sku: uniqueSku('product'),
      name: 'Runner',
      priceCents: 4500,
      currency: 'eur',
      stock: 1,
      ...terms,
    }),
    admin,
  );

test.serial(
  '%00 and %ED%A0%80 in every path parameter are 400 naming it, before anything is read or written',
  async (t) => {
    const buyer = await asBuyer('path-buyer');
    const routes: [string, (p: string) => string, string, string | undefined, Record<string, string>][] = [
      ['GET', (p) => `/v1/products/${p}`, 'sku', undefined, {}],
      ['POST', (p) => `/v1/products/${p}/restock`, 'sku', '{"quantity":1}', admin],
      ['GET', (p) => `/v1/purchases/${p}`, 'id', undefined, buyer],
      ['POST', (p) => `/v1/purchases/${p}/cancel`, 'id', undefined, buyer],
      ['POST', (p) => `/v1/support/purchases/${p}/refund`, 'id', '{"reason":"x","restock":false}', support],
    ];
    const before = writes.count();
    for (const [method, path, field, body, headers] of routes) {
      for (const bad of ['%00', '%ED%A0%80', 'a%00b', '%FF', '%E0%A4%A', '%7F', encodeURIComponent('x'.repeat(257))]) {
        const res = await send(method, path(bad), body, headers);
        t.is(res.status, 400, `${method} ${path(bad).slice(0, 60)}: ${res.text}`);
        t.is(problem(res).type, 'invalid-request');
        t.deepEqual(fields(res), [field]);
      }
    }
    t.is(writes.count(), before, writes.last().join(' | '));
  },
);

test.serial('a lone surrogate or NUL in any JSON string is 400 naming the field, and nothing is written', async (t) => {
  const sku = uniqueSku('bad-text');
  const before = writes.count();
  const product = { sku, name: 'Runner', priceCents: 100, currency: 'usd', stock: 2 };
  const cases: [string, string, unknown, Record<string, string>, string][] = [
    ['POST', '/v1/products', { ...product, name: '\ud800' }, admin, 'name'],
    ['POST', '/v1/products', { ...product, name: 'a\u0000b' }, admin, 'name'],
    ['POST', '/v1/products', { ...product, units: ['A1', 'x\udfff'], stock: 2 }, admin, 'units.1'],
    ['POST', '/v1/products', { ...product, '\ud800': 1 }, admin, 'body'],
    ['POST', '/v1/purchases', { sku, buyerId: '\ud800' }, await asBuyer('surrogate-buyer'), 'buyerId'],
    ['POST', '/v1/purchases', { sku: 'a\u0000', buyerId: 'x' }, await asBuyer('x'), 'sku'],
    ['POST', '/v1/purchases', { sku, unitId: '\u0085' }, await asBuyer('x'), 'unitId'],
  ];
  for (const [method, path, body, headers, field] of cases) {
    const res = await send(method, path, JSON.stringify(body), { 'Idempotency-Key': randomUUID(), ...headers });
    t.is(res.status, 400, `${JSON.stringify(body)}: ${res.text}`);
    t.deepEqual(fields(res), [field], res.text);
  }
  // JSON.stringify writes a lone surrogate as the escape `\ud800`: the same text, typed by hand.
  const typed = await send(
    'POST',
    '/v1/products',
    `{"sku":"${sku}","name":"\\ud800","priceCents":1,"currency":"usd","stock":1}`,
    admin,
  );
  t.deepEqual(fields(typed), ['name']);
  t.is(writes.count(), before, writes.last().join(' | '));
  t.is((await sys.db.query('SELECT 1 FROM products WHERE sku = $1', [sku])).rowCount, 0);
});

test.serial('an opening time that names no real time is 400 naming opensAt, and nothing is written', async (t) => {
  const before = writes.count();
  // Each matches the pattern and Date.parse takes it; Postgres refused each with a 500 before.
  for (const opensAt of [
    '2031-02-30T09:00:00Z',
    '0000-01-01T00:00:00Z',
    '2031-01-01T00:00:00+23:59',
    '2031-01-01T24:00Z',
  ]) {
    const res = await postProduct({ opensAt });
    t.is(res.status, 400, `${opensAt}: ${res.text}`);
    t.deepEqual(fields(res), ['opensAt'], res.text);
  }
  t.is(writes.count(), before, writes.last().join(' | '));
  const leapDay = await postProduct({ opensAt: '2032-02-29T09:00:00+14:00' });
  t.is(leapDay.status, 201, leapDay.text);
  t.is((leapDay.json as { opensAt: string }).opensAt, '2032-02-28T19:00:00.000Z');
});

test.serial(
  'a price under Stripe’s smallest charge in its currency is 400 naming priceCents: every session would be refused',
  async (t) => {
    const before = writes.count();
    for (const [currency, priceCents] of [
      ['usd', 49],
      ['EUR', 1],
      ['gbp', 29],
      ['jpy', 49],
    ] as const) {
      const res = await postProduct({ priceCents, currency });
      t.is(res.status, 400, `${priceCents} ${currency}: ${res.text}`);
      t.deepEqual(fields(res), ['priceCents'], res.text);
    }
    t.is(writes.count(), before, writes.last().join(' | '));
    const smallest = await postProduct({ priceCents: 30, currency: 'gbp' });
    t.is(smallest.status, 201, smallest.text);
  },
);

test.serial(
  'shipping countries that name no country (UK for GB, EU, a code no one has) are 400 naming shippingCountries',
  async (t) => {
    const before = writes.count();
    for (const [countries, said] of [
      [['FR', 'UK'], /UK: the United Kingdom is GB/],
      [['EU'], /EU: the European Union is no country/],
      [['DE', 'XX'], /XX is no ISO 3166-1 country code/],
    ] as const) {
      const res = await postProduct({ shippingCountries: countries });
      t.is(res.status, 400, res.text);
      t.deepEqual(fields(res), ['shippingCountries'], res.text);
      t.regex(res.text, said);
    }
    t.is(writes.count(), before, writes.last().join(' | '));
    const ships = await postProduct({ shippingCountries: ['GB', 'FR', 'XK'] });
    t.is(ships.status, 201, ships.text);
  },
);

test.serial('20,000-deep nesting is a quick 400 on every route that takes a body', async (t) => {
  const arrays = '['.repeat(20_000) + ']'.repeat(20_000);
  // 100 kB: only the product route reads that much; elsewhere the size limit answers first (413).
  const objects = '{"a":'.repeat(20_000) + '1' + '}'.repeat(20_000);
  const before = writes.count();
  const routes: [string, Record<string, string>, string[]][] = [
    ['/v1/products', admin, [arrays, objects]],
    ['/v1/products/x/restock', admin, [arrays]],
    ['/v1/purchases', { ...(await asBuyer('deep')), 'Idempotency-Key': randomUUID() }, [arrays]],
    ['/v1/purchases/pur_0/cancel', await asBuyer('deep'), [arrays]],
    ['/v1/support/purchases/pur_0/refund', support, [arrays]],
  ];
  for (const [path, headers, bodies] of routes) {
    for (const body of bodies) {
      const started = Date.now();
      const res = await send('POST', path, body, headers);
      t.is(res.status, 400, `${path}: ${res.text.slice(0, 200)}`);
      t.deepEqual(problem(res).errors, [{ field: 'body', message: 'must not nest deeper than 32 levels' }]);
      t.true(Date.now() - started < 1000, `${path} answered in ${Date.now() - started} ms`);
    }
  }
  const tooBig = await send('POST', '/v1/purchases/pur_0/cancel', objects, await asBuyer('deep'));
  t.is(problem(tooBig).type, 'payload-too-large');
  t.is(writes.count(), before);
});

test.serial(
  'a restock that would take the total past the bound is refused, atomically, and 2^31 never comes near',
  async (t) => {
    const sku = await sys.createProduct({ sku: uniqueSku('total'), stock: 10_000_000, buckets: 4 });
    const restock = (quantity: number) =>
      send('POST', `/v1/products/${sku}/restock`, JSON.stringify({ quantity }), admin);
    for (let i = 0; i < 98; i++) t.is((await restock(10_000_000)).status, 200);
    // 990,000,000 now: three concurrent restocks of 5,000,000 for the 10,000,000 left; exactly two fit.
    const racing = await Promise.all([restock(5_000_000), restock(5_000_000), restock(5_000_000)]);
    t.deepEqual(racing.map((r) => r.status).sort(), [200, 200, 400]);
    const refused = racing.find((r) => r.status === 400)!;
    t.deepEqual(fields(refused), ['quantity']);
    t.regex(problem(refused).errors![0].message, /would pass 1000000000/);
    const one = await restock(1);
    t.is(one.status, 400);
    t.regex(problem(one).errors![0].message, /at most 0 more can be added/);
    t.is((await restock(2 ** 31)).status, 400, 'a quantity past its own bound');
    const view = await send('GET', `/v1/products/${sku}`);
    t.like(view.json, { total: MAX_TOTAL, available: MAX_TOTAL });
    t.true(MAX_TOTAL * 2 < 2 ** 31 - 1, 'total + allowance and every sum of the ledger fit an integer');
    await assertInvariants(t, sys.db, sku);
  },
);

test.serial('a product of 100,000 seats is created in one request; a body beyond the limit is 413', async (t) => {
  const sku = uniqueSku('arena');
  // Every id as long as a unit id may be (64 characters): the largest body of 100,000 seats.
  const units = Array.from({ length: 100_000 }, (_, i) =>
    `block-${Math.floor(i / 1000)}-seat-${i % 1000}-`.padEnd(64, 'x'),
  );
  const body = JSON.stringify({ sku, name: 'Arena', priceCents: 4500, currency: 'eur', stock: units.length, units });
  const started = Date.now();
  const res = await send('POST', '/v1/products', body, admin);
  const ms = Date.now() - started;
  t.is(res.status, 201, res.text.slice(0, 300));
  t.like(res.json, { total: 100_000, available: 100_000, hasUnits: true });
  t.log(`100,000 seats (${(body.length / 1e6).toFixed(1)} MB) created in ${ms} ms`);
  t.true(ms < 30_000);
  const { rows } = await sys.db.query('SELECT count(*)::int AS n FROM units WHERE sku = $1', [sku]);
  t.is(rows[0].n, 100_000);

  const huge = JSON.stringify({ ...JSON.parse(body), sku: uniqueSku('too-big'), name: 'x'.repeat(9 * 1024 * 1024) });
  const tooBig = await send('POST', '/v1/products', huge, admin);
  t.is(tooBig.status, 413);
  t.like(problem(tooBig), { type: 'payload-too-large', limit: 8 * 1024 * 1024 });
  // Without the admin token the large body is not even read.
  t.is((await send('POST', '/v1/products', huge)).status, 401);
  const elsewhere = await send(
    'POST',
    '/v1/support/purchases/pur_0/refund',
    JSON.stringify({ reason: 'x'.repeat(70_000) }),
    support,
  );
  t.like(problem(elsewhere), { type: 'payload-too-large', limit: 64 * 1024 });
});

test.serial('unknown methods, paths and content types are problems, never a bare text body', async (t) => {
  // Methods Node knows but no route serves: 405 with Allow (Schemathesis and 5xx alerts count a 501).
  for (const method of ['TRACE', 'QUERY', 'PROPFIND', 'PUT']) {
    const res = await send(method, '/v1/products');
    t.is(res.status, 405, method);
    t.is(res.headers.allow, 'POST', method);
    t.is(problem(res).type, 'method-not-allowed');
  }
  const trace = await send('TRACE', '/v1/purchases/pur_0');
  t.is(trace.status, 405);
  t.is(trace.headers.allow, 'HEAD, GET');
  t.is((await send('TRACE', '/no/such/route')).status, 404);
  // A method the server does not recognise: 501, still a problem.
  const foo = await send('FOO', '/v1/products');
  t.is(foo.status, 501);
  t.is(problem(foo).type, 'not-implemented');
  t.is(problem(await send('GET', '/no/such/route')).type, 'not-found');
  const text = await sendRaw(sys.apiUrl, {
    method: 'POST',
    path: '/v1/products',
    headers: [
      ['Authorization', admin.authorization],
      ['Content-Type', 'text/plain'],
    ],
    body: Buffer.from('{"sku":"a"}'),
  });
  t.is(text.status, 400);
  t.deepEqual(fields(text), ['Content-Type']);
  const tab = await send('GET', '/v1/products/x', undefined, { 'Idempotency-Key': 'a\tb' });
  t.deepEqual(fields(tab), ['Idempotency-Key']);
});

test.serial(
  'a signed webhook body that is no Stripe event is 400 bad-signature, not a 500 Stripe would retry',
  async (t) => {
    for (const payload of [
      '[]',
      '{"id":"evt_1","type":"checkout.session.completed"}',
      '{"id":"evt_2","type":"x","created":1,"data":[]}',
    ]) {
      const signature = Stripe.webhooks.generateTestHeaderString({ payload, secret: WEBHOOK_SECRET });
      const res = await send('POST', '/v1/webhooks/stripe', payload, { 'Stripe-Signature': signature });
      t.is(res.status, 400, res.text);
      t.is(problem(res).type, 'bad-signature');
    }
    const big = await send('POST', '/v1/webhooks/stripe', JSON.stringify({ pad: 'x'.repeat(600_000) }), {
      'Stripe-Signature': 't=1,v1=0',
    });
    t.like(problem(big), { type: 'payload-too-large', limit: 512 * 1024 });
  },
);

test.serial(
  'the webhook at its path in other case or with a trailing slash is answered, not left waiting',
  async (t) => {
    // An event of a type the service does not act on, signed: its answer says it was received.
    const payload = JSON.stringify({
      id: 'evt_path_case',
      object: 'event',
      type: 'customer.created',
      created: 1,
      livemode: false,
      data: { object: { id: 'cus_1', object: 'customer' } },
    });
    const signature = Stripe.webhooks.generateTestHeaderString({ payload, secret: WEBHOOK_SECRET });
    for (const path of ['/v1/webhooks/stripe/', '/V1/Webhooks/Stripe']) {
      const answered = await Promise.race([
        send('POST', path, payload, { 'Stripe-Signature': signature }),
        new Promise<null>((r) => setTimeout(() => r(null), 15_000).unref()),
      ]);
      t.not(answered, null, `${path} was answered`);
      t.is(answered?.status, 200, `${path}: ${answered?.text}`);
    }
  },
);

test.serial(
  'a support reason with NUL, line breaks and a lone surrogate is sanitised, and the refund completes',
  async (t) => {
    const sku = await sys.createProduct({ sku: uniqueSku('reason'), stock: 1 });
    const bought = await sys.buy(sku, 'reason-buyer');
    t.is(bought.status, 201, JSON.stringify(bought.body));
    await sys.pay(await sessionOf(sys.db, bought.body.purchaseId), 'succeeded');
    await sys.waitForPurchase(bought.body.purchaseId, (r) => r.status === 'confirmed');
    const path = `/v1/support/purchases/${bought.body.purchaseId}/refund`;
    const empty = await send('POST', path, JSON.stringify({ reason: '\u0000\n\t ', restock: false }), support);
    t.deepEqual(fields(empty), ['reason']);
    const res = await send(
      'POST',
      path,
      JSON.stringify({ reason: ' box\u0000crushed\r\nsee \ud800 photo ', restock: false }),
      support,
    );
    t.is(res.status, 202, res.text);
    const reason = 'box crushed  see \ufffd photo';
    t.like(res.json, { refund: { reason } });
    const done = await sys.waitForPurchase(bought.body.purchaseId, (r) => r.status === 'refunded');
    t.is(done.refund_reason, reason);
    const { rows } = await sys.db.query(
      "SELECT detail FROM audit_log WHERE purchase_id = $1 AND action = 'refund_requested'",
      [bought.body.purchaseId],
    );
    t.is(rows[0]?.detail?.reason, reason);
  },
);
