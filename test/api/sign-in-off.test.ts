import test from 'ava';
import { startSystem, type System } from '../helpers/system';

// The development sign-in is off unless asked for (DEV_SIGN_IN=1): an API started as in production
// has no page where a typed name becomes a buyer. test/api/pages.test.ts runs it switched on.

let sys: System;
test.before(async () => {
  sys = await startSystem({ worker: false });
});
test.after.always(async () => {
  await sys?.close();
});

test('without DEV_SIGN_IN the sign-in page is a 404 and posting a name sets no cookie', async (t) => {
  const page = await fetch(`${sys.apiUrl}/sign-in`);
  t.is(page.status, 404);
  t.regex(await page.text(), /no sign-in page here/);
  const posted = await fetch(`${sys.apiUrl}/sign-in`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', origin: sys.apiUrl },
    body: new URLSearchParams({ name: 'mallory', next: '/' }).toString(),
    redirect: 'manual',
  });
  t.is(posted.status, 404);
  t.is(posted.headers.get('set-cookie'), null);
});

test('without DEV_SIGN_IN a product page offers no sign-in link', async (t) => {
  const sku = await sys.createProduct();
  const res = await fetch(`${sys.apiUrl}/p/${sku}`);
  t.is(res.status, 200);
  t.false((await res.text()).includes('href="/sign-in'));
});
