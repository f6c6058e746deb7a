import { randomUUID } from 'node:crypto';
import test from 'ava';
import { asBuyer } from '../helpers/credentials';
import { onCheckout, onPurchase, press, reloadOf, titleOf, words } from '../helpers/no-script';
import { pageSuite } from '../helpers/page-suite';

// The checkout line with JavaScript off, at a phone's size (issue 32; checkout-line-pages.test.ts is
// the same with JavaScript on and axe): Buy while the checkout waits for its turn in the Stripe budget
// reads "Preparing your checkout" and reloads itself every 2 s; once the session opens it reads "Your
// checkout is ready" and goes on to Stripe's page by its <noscript> refresh, with a link for the same.
// The budget is slow (one checkout every 9 s, on a database of this file's own), so the third
// buyer's turn is far enough off for the page to be read before it.

const suite = pageSuite(test, { ownDatabase: true, devSignIn: true, checkoutsPerSecond: 0.1 });

test('a checkout waiting for its turn reads "Preparing your checkout", reloading itself, then "ready", and its refresh goes on to pay', async (t) => {
  const sku = await suite.sys.createProduct({ name: 'Quiet line boot', stock: 5, priceCents: 7_000 });
  const page = await suite.page(t, { js: false, buyer: 'nl-third', timeoutMs: 90_000 });
  // The ready page's refresh to Stripe's page is answered 204 the first time (a browser stays on the
  // page), so the ready state can be read; the test waits for that refresh itself, never for an instant.
  let wentOn!: (url: string) => void;
  const refreshed = new Promise<string>((resolve) => (wentOn = resolve));
  await page.route('**/checkout/cs_*', async (route) => {
    wentOn(route.request().url());
    await route.fulfill({ status: 204 });
  });

  await page.goto(`${suite.sys.apiUrl}/p/${sku}`);
  // Two buyers ahead take the budget's next two turns once this buyer's page is open, answered at once
  // (202, not after the first one's session opened): this buyer's turn comes two turns (18 s) after
  // theirs, room enough on a loaded machine to press Buy and read the page (about 1 s at a load of 16).
  for (const ahead of ['nl-first', 'nl-second']) {
    const headers = { 'idempotency-key': randomUUID(), prefer: 'respond-async', ...(await asBuyer(ahead)) };
    const res = await suite.sys.api('POST', '/v1/purchases', { sku }, headers);
    t.is(res.status, 202, JSON.stringify(res.body));
  }
  await press(page, '#buy', onPurchase);
  t.is(new URL(page.url()).searchParams.get('then'), 'pay');
  t.is(await page.locator('h1').textContent(), 'Preparing your checkout');
  const preparing = await words(page, '#outcome');
  t.regex(preparing, /(You are next|buyers? (is|are) ahead of you), about \d+ (s|min)/);
  t.regex(preparing, /This page updates by itself and takes you on to pay\.$/);
  t.is(await page.locator('#pay').count(), 0, 'nothing to pay yet');
  t.is(await reloadOf(page), '2', 'it reloads itself every 2 s');
  t.is(await page.locator('#order a').getAttribute('href'), `/p/${sku}`, 'the product is a link away');

  // The turn comes: a reload brings "ready", whose own refresh goes on to Stripe's page.
  await page.waitForSelector('h1:text("Your checkout is ready")');
  t.is(await titleOf(page), 'Your checkout is ready');
  t.regex(await words(page, '#outcome'), /payment page is open for you: taking you there now\.$/);
  const pay = (await page.locator('#pay').getAttribute('href')) ?? '';
  t.regex(pay, /\/checkout\/cs_/);
  t.is(await page.locator('#pay').textContent(), 'Go to the payment page');
  t.is(await reloadOf(page), `1; url=${pay}`, 'on to the payment page after a second');
  t.is(await refreshed, pay, 'its <noscript> refresh went on to the payment page');
  await page.unroute('**/checkout/cs_*');

  // The link does the same, and paying brings the buyer back confirmed.
  await press(page, '#pay', onCheckout);
  await press(page, '#pay', onPurchase);
  await page.waitForSelector('#outcome[data-status="confirmed"]');
  t.regex(await words(page, '#outcome'), /you paid \$70\.00/);
});
