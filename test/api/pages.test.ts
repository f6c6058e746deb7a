import { randomUUID } from 'node:crypto';
import test from 'ava';
import { buyerToken, startSystem, type System } from '../helpers/system';

// The buyer's pages over HTTP: bad input is a 4xx page in words (HTML, never a 500, nothing
// written), forms only from our own origin, a double submit buys once, the old return URL redirects.

let sys: System;
test.before(async () => {
  sys = await startSystem({ devSignIn: true });
});
test.after.always(async () => {
  await sys?.close();
});

async function cookieOf(buyerId: string): Promise<string> {
  return `buyer_token=${await buyerToken(buyerId)}`;
}

async function get(path: string, headers: Record<string, string> = {}) {
  const res = await fetch(`${sys.apiUrl}${path}`, { headers, redirect: 'manual' });
  return { status: res.status, headers: res.headers, text: await res.text() };
}

/** A form post as a browser sends it from our own page (unless `headers` says otherwise). */
async function postForm(path: string, fields: Record<string, string>, headers: Record<string, string> = {}) {
  const res = await fetch(`${sys.apiUrl}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', origin: sys.apiUrl, ...headers },
    body: new URLSearchParams(fields).toString(),
    redirect: 'manual',
  });
  return { status: res.status, headers: res.headers, text: await res.text() };
}

async function purchasesOf(buyerId: string): Promise<number> {
  const { rows } = await sys.db.query('SELECT count(*)::int AS n FROM purchases WHERE buyer_id = $1', [buyerId]);
  return rows[0].n as number;
}

const isPage = (t: any, res: { status: number; headers: Headers; text: string }, status: number) => {
  t.is(res.status, status, res.text.slice(0, 400));
  t.regex(res.headers.get('content-type') ?? '', /^text\/html; charset=utf-8/);
  t.regex(res.text, /^<!doctype html>\s*<html lang="en">/);
};

test('an unknown product is a 404 page in words', async (t) => {
  const res = await get('/p/no-such-sku');
  isPage(t, res, 404);
  t.regex(res.text, /<h1>No such product<\/h1>/);
  t.regex(res.text, /data-kind="product-not-found"/);
});

test('a path parameter that is not clean text is a 400 page, not a problem+json nor a 500', async (t) => {
  for (const path of ['/p/%00', '/p/%ED%A0%80', `/p/${'a'.repeat(300)}`, '/purchases/%1f']) {
    const res = await get(path);
    isPage(t, res, 400);
    t.regex(res.text, /Something in the form is not right/);
  }
});

test('the Buy form refuses a missing or unclean key, a bad quantity, a repeated field and a non-form body with a 400 page, buying nothing', async (t) => {
  const sku = await sys.createProduct();
  const cookie = await cookieOf('forms-alice');
  const cases: [Record<string, string> | string, string, Record<string, string>?][] = [
    [{ quantity: '1' }, 'idempotencyKey'],
    [{ idempotencyKey: randomUUID(), quantity: 'abc' }, 'quantity'],
    [{ idempotencyKey: randomUUID(), quantity: '0' }, 'quantity'],
    [{ idempotencyKey: randomUUID(), quantity: '99999' }, 'quantity'],
    [`idempotencyKey=${randomUUID()}&quantity=1&quantity=2`, 'quantity'],
    [{ idempotencyKey: 'k'.repeat(300) }, 'idempotencyKey'],
    // A NUL was a 500 (Postgres refused the purchase row); another control character was stored.
    ['idempotencyKey=a%00b&quantity=1', 'idempotencyKey'],
    ['idempotencyKey=a%01b&quantity=1', 'idempotencyKey'],
  ];
  for (const [fields, field] of cases) {
    const res = await fetch(`${sys.apiUrl}/p/${sku}/buy`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', origin: sys.apiUrl, cookie },
      body: typeof fields === 'string' ? fields : new URLSearchParams(fields).toString(),
      redirect: 'manual',
    });
    const text = await res.text();
    isPage(t, { status: res.status, headers: res.headers, text }, 400);
    t.true(text.includes(`<code>${field}</code>`), `${JSON.stringify(fields)} names ${field}: ${text}`);
    if (fields === cases[1][0]) {
      // In words, with the buyer still shown and the way back to the product.
      t.regex(text, /The quantity must be a whole number\./);
      t.regex(text, /<strong id="buyer">forms-alice<\/strong>/);
      t.regex(text, new RegExp(`<a href="/p/${sku}">Back to the product</a>`));
    }
  }
  const json = await fetch(`${sys.apiUrl}/p/${sku}/buy`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', origin: sys.apiUrl, cookie },
    body: JSON.stringify({ idempotencyKey: randomUUID() }),
  });
  t.is(json.status, 400);
  t.regex(await json.text(), /<code>Content-Type<\/code>/);
  t.is(await purchasesOf('forms-alice'), 0);
});

test('a form from another origin, or with no origin at all, is refused 403 (CSRF)', async (t) => {
  const sku = await sys.createProduct();
  const cookie = await cookieOf('forms-bob');
  const fields = { idempotencyKey: randomUUID() };
  for (const headers of [{ origin: 'https://evil.example' }, { origin: 'null' }, { origin: '' }]) {
    const res = await postForm(`/p/${sku}/buy`, fields, { cookie, ...headers });
    isPage(t, res, 403);
  }
  isPage(t, await postForm('/sign-in', { name: 'mallory' }, { origin: 'https://evil.example' }), 403);
  t.is(await purchasesOf('forms-bob'), 0);
});

test('Buy without signing in is a 401 page with a sign-in link back to the product', async (t) => {
  const sku = await sys.createProduct();
  const res = await postForm(`/p/${sku}/buy`, { idempotencyKey: randomUUID() });
  isPage(t, res, 401);
  t.true(res.text.includes(`href="/sign-in?next=%2Fp%2F${sku}"`));
});

test('a double submit of the Buy form makes one purchase and sends both to the same checkout', async (t) => {
  const sku = await sys.createProduct();
  const cookie = await cookieOf('forms-carol');
  const fields = { idempotencyKey: randomUUID(), quantity: '1' };
  const [a, b] = await Promise.all([
    postForm(`/p/${sku}/buy`, fields, { cookie }),
    postForm(`/p/${sku}/buy`, fields, { cookie }),
  ]);
  t.is(a.status, 303, a.text);
  t.is(b.status, 303, b.text);
  t.regex(a.headers.get('location') ?? '', /\/checkout\/cs_/);
  t.is(a.headers.get('location'), b.headers.get('location'));
  t.is(await purchasesOf('forms-carol'), 1);
  t.like((await sys.api('GET', `/v1/products/${sku}`)).body, { held: 1 });
  // A third time, once the purchase is over, goes to its outcome page.
  const { rows } = await sys.db.query('SELECT purchase_id FROM purchases WHERE buyer_id = $1', ['forms-carol']);
  const cancelled = await sys.api('POST', `/v1/purchases/${rows[0].purchase_id}/cancel`, undefined, {
    authorization: `Bearer ${await buyerToken('forms-carol')}`,
  });
  t.is(cancelled.status, 200, JSON.stringify(cancelled.body));
  const again = await postForm(`/p/${sku}/buy`, fields, { cookie });
  t.is(again.status, 303);
  t.is(again.headers.get('location'), `/purchases/${rows[0].purchase_id}`);
});

test('a buyer who already holds the product is told so, with a link to that purchase', async (t) => {
  const sku = await sys.createProduct();
  const first = await sys.buy(sku, 'forms-dave');
  t.is(first.status, 201);
  const res = await postForm(
    `/p/${sku}/buy`,
    { idempotencyKey: randomUUID() },
    { cookie: await cookieOf('forms-dave') },
  );
  isPage(t, res, 409);
  t.true(res.text.includes(`href="/purchases/${first.body.purchaseId}"`));
});

test("the purchase page: 401 signed out, 404 for another buyer's or an unknown purchase", async (t) => {
  const sku = await sys.createProduct();
  const { body } = await sys.buy(sku, 'forms-erin');
  isPage(t, await get(`/purchases/${body.purchaseId}`), 401);
  isPage(t, await get(`/purchases/${body.purchaseId}`, { cookie: await cookieOf('forms-frank') }), 404);
  isPage(t, await get('/purchases/pur_nope', { cookie: await cookieOf('forms-erin') }), 404);
  const own = await get(`/purchases/${body.purchaseId}`, { cookie: await cookieOf('forms-erin') });
  isPage(t, own, 200);
  t.regex(own.text, /data-status="awaiting_payment"/);
  t.is(own.headers.get('cache-control'), 'no-store');
});

test("the purchase page asked for JSON is the purchase's JSON view, for its buyer only (the page's script polls it)", async (t) => {
  const sku = await sys.createProduct();
  const { body } = await sys.buy(sku, 'forms-gus');
  const json = { accept: 'application/json' };
  const own = await fetch(`${sys.apiUrl}/purchases/${body.purchaseId}`, {
    headers: { ...json, cookie: await cookieOf('forms-gus') },
  });
  t.is(own.status, 200);
  t.like(await own.json(), { purchaseId: body.purchaseId, sku, status: 'awaiting_payment' });
  t.is(own.headers.get('cache-control'), 'no-store');
  const other = await fetch(`${sys.apiUrl}/purchases/${body.purchaseId}`, {
    headers: { ...json, cookie: await cookieOf('forms-hal') },
  });
  t.is(other.status, 404);
});

test("My purchases lists the buyer's own purchases, newest first, and is a 401 page signed out", async (t) => {
  const first = await sys.createProduct({ name: 'First tee' });
  const second = await sys.createProduct({ name: 'Second cap' });
  const a = await sys.buy(first, 'forms-ivy');
  const b = await sys.buy(second, 'forms-ivy');
  await sys.buy(first, 'forms-jo');
  isPage(t, await get('/purchases'), 401);
  const page = await get('/purchases', { cookie: await cookieOf('forms-ivy') });
  isPage(t, page, 200);
  const links = [...page.text.matchAll(/href="\/purchases\/(pur_[0-9a-f]+)">1 × ([^<]+)</g)].map((m) => [m[1], m[2]]);
  t.deepEqual(links, [
    [b.body.purchaseId, 'Second cap'],
    [a.body.purchaseId, 'First tee'],
  ]);
  t.regex(page.text, /data-status="awaiting_payment">Your item is reserved</);
  t.regex(page.text, /id="my-purchases"/, 'the header links it');
  const none = await get('/purchases', { cookie: await cookieOf('forms-nobody') });
  t.regex(none.text, /You have no purchases yet/);
});

test('the old Checkout return URL redirects to the purchase page, back from paying or by the cancel link', async (t) => {
  const done = await get('/checkout/return/pur_abc');
  t.is(done.status, 303);
  t.is(done.headers.get('location'), '/purchases/pur_abc?result=paid');
  const left = await get('/checkout/return/pur_abc?result=cancel');
  t.is(left.headers.get('location'), '/purchases/pur_abc?result=cancel');
});

test('the sign-in refuses a bad name with a 400 page, and never redirects off the site', async (t) => {
  const bad = await postForm('/sign-in', { name: '<script>', next: '/' });
  isPage(t, bad, 400);
  t.true(bad.text.includes('value="&lt;script&gt;"'), 'the name comes back escaped');
  t.is(bad.headers.get('set-cookie'), null);
  for (const next of ['//evil.example/x', 'https://evil.example', '/\\evil.example', 'javascript:alert(1)']) {
    const res = await postForm('/sign-in', { name: 'grace', next });
    t.is(res.status, 303);
    t.is(res.headers.get('location'), '/', next);
  }
  const ok = await postForm('/sign-in', { name: 'grace', next: '/p/x?y=1' });
  t.is(ok.headers.get('location'), '/p/x?y=1');
  t.regex(
    ok.headers.get('set-cookie') ?? '',
    /^buyer_token=[\w-]+\.[\w-]+\.[\w-]+; Path=\/; Max-Age=\d+; HttpOnly; SameSite=Lax$/,
  );
});

test('with no waiting room, a queue page and Join the queue are 404 pages', async (t) => {
  isPage(t, await get('/queue/tkt_anything'), 404);
  const sku = await sys.createProduct();
  isPage(t, await postForm(`/p/${sku}/queue`, {}, { cookie: await cookieOf('forms-henry') }), 404);
});

test('pages outside the buyer pages keep their problem+json answers', async (t) => {
  const res = await get('/v1/products/no-such-sku');
  t.is(res.status, 404);
  t.regex(res.headers.get('content-type') ?? '', /^application\/problem\+json/);
  const unknown = await get('/p/a/b/c');
  t.is(unknown.status, 404);
  t.regex(unknown.headers.get('content-type') ?? '', /^application\/problem\+json/);
});
