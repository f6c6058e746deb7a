import test, { type ExecutionContext } from 'ava';
import type { BrowserContext, Page } from 'playwright-core';
import { signBuyerToken } from '../../config/buyer-tokens';
import { shot, signInAs } from '../helpers/browser';
import { axeClean, pageSuite } from '../helpers/page-suite';
import { sessionIdOfCheckoutUrl } from '@flash-sale/stripe-emulator';

// The buyer's pages in Chromium against the whole system: the catalogue, the product page, the
// development sign-in, the Buy form, the emulator's hosted checkout page, and the purchase page
// Checkout sends the buyer back to. With SCREENSHOTS=1 each page is saved to docs/screenshots/.

const suite = pageSuite(test, { devSignIn: true });
const VIEWPORT = { width: 720, height: 560 };

async function openContext(t: ExecutionContext, javaScriptEnabled = true): Promise<BrowserContext> {
  const context = await suite.browser.newContext({ viewport: VIEWPORT, javaScriptEnabled });
  t.teardown(() => context.close());
  return context;
}

function openPage(t: ExecutionContext, js = true): Promise<Page> {
  return suite.page(t, { viewport: VIEWPORT, js, timeoutMs: 30_000 });
}

/** Presses Buy and follows the 303 to the emulator's hosted checkout page; returns the purchase id. */
async function buy(page: Page): Promise<string> {
  await Promise.all([page.waitForURL((u) => u.pathname.startsWith('/checkout/cs_')), page.locator('#buy').click()]);
  const { rows } = await suite.sys.db.query('SELECT purchase_id FROM purchases WHERE checkout_session_id = $1', [
    new URL(page.url()).pathname.split('/').pop(),
  ]);
  return rows[0].purchase_id as string;
}

const outcome = (page: Page) => page.locator('#outcome');

/** Waits (the page refreshes itself) until the purchase page shows `status`. */
async function waitForOutcome(page: Page, status: string): Promise<void> {
  await page.waitForSelector(`#outcome[data-status="${status}"]`, { timeout: 30_000 });
}

test('a buyer finds the product, signs in, buys, pays and reads "confirmed" on the purchase page', async (t) => {
  const sku = await suite.sys.createProduct({ name: 'Aurora runner', priceCents: 12_900 });
  const page = await openPage(t);
  await page.goto(`${suite.sys.apiUrl}/`);
  t.is(await page.title(), 'On sale');
  t.is(await page.locator('html').getAttribute('lang'), 'en');
  await shot(page, 'home');
  await axeClean(t, page, 'what is on sale');

  await Promise.all([
    page.waitForURL(`${suite.sys.apiUrl}/p/${sku}`),
    // This product's own link: another file on the shared database may list one of the same name.
    page.locator(`a[href="/p/${sku}"]`, { hasText: 'Aurora runner' }).first().click(),
  ]);
  t.is(await page.locator('h1').textContent(), 'Aurora runner');
  t.is(await page.locator('#price').textContent(), '$129.00');
  await shot(page, 'product-signed-out');
  await axeClean(t, page, 'a product, signed out');

  await page.getByRole('link', { name: 'Sign in to buy' }).click();
  await shot(page, 'sign-in');
  await axeClean(t, page, 'the development sign-in');
  await page.getByLabel('Your name').fill('pages-alice');
  await Promise.all([page.waitForURL(`${suite.sys.apiUrl}/p/${sku}`), page.locator('#sign-in').click()]);
  t.is(await page.locator('#buyer').textContent(), 'pages-alice');
  const cookies = await page.context().cookies();
  t.like(
    cookies.find((c) => c.name === 'buyer_token'),
    { httpOnly: true, sameSite: 'Lax' },
  );
  await shot(page, 'product');
  await axeClean(t, page, 'a product, signed in: Buy');

  const purchaseId = await buy(page);
  t.is(await page.title(), 'Checkout · Aurora runner');
  await Promise.all([page.waitForURL((u) => u.pathname === `/purchases/${purchaseId}`), page.locator('#pay').click()]);
  await waitForOutcome(page, 'confirmed');
  t.is(await page.locator('h1').textContent(), 'Your purchase is confirmed');
  t.regex((await outcome(page).textContent()) ?? '', /confirmed/);
  t.is(await page.locator('meta[http-equiv="refresh"]').count(), 0, 'a settled purchase stops refreshing');
  const { rows: confirmed } = await suite.sys.db.query('SELECT confirmed_at FROM purchases WHERE purchase_id = $1', [
    purchaseId,
  ]);
  t.is(await page.locator('#confirmed-at').getAttribute('datetime'), confirmed[0].confirmed_at.toISOString());
  t.regex((await page.locator('#next').textContent()) ?? '', /This page is your receipt/);
  t.is(await page.locator('#ships-to').count(), 0, 'a product that ships nowhere has no address');
  await shot(page, 'purchase-confirmed');
  await axeClean(t, page, 'confirmed');
  const p = await suite.sys.purchase(purchaseId);
  t.like(p.body, { status: 'confirmed', buyerId: 'pages-alice', sku });
});

test('a second buyer of a product sold meanwhile sees "sold out", and the product page then offers no Buy', async (t) => {
  const sku = await suite.sys.createProduct({ name: 'Last pair', stock: 1 });
  const page = await openPage(t);
  await page.goto(`${suite.sys.apiUrl}/p/${sku}`);
  await signInAs(page, 'pages-bob');
  t.is(await page.locator('#buy').count(), 1);

  // Someone else buys and pays for the last unit while bob's page is open.
  const first = await suite.sys.buy(sku, 'pages-first');
  t.is(first.status, 201, JSON.stringify(first.body));
  await suite.sys.pay(sessionIdOfCheckoutUrl(first.body.checkoutUrl), 'succeeded');
  await suite.sys.waitForPurchase(first.body.purchaseId, (r) => r.status === 'confirmed');

  const [answer] = await Promise.all([
    page.waitForResponse((r) => r.url().endsWith(`/p/${sku}/buy`)),
    page.locator('#buy').click(),
  ]);
  t.is(answer.status(), 409);
  t.is(await page.locator('h1').textContent(), 'Sold out');
  t.is(await page.locator('#notice').getAttribute('data-kind'), 'sold-out');
  await shot(page, 'sold-out');
  await axeClean(t, page, 'Buy refused: sold out');

  await page.goto(`${suite.sys.apiUrl}/p/${sku}`);
  t.is(await page.locator('#offer').getAttribute('data-state'), 'sold_out');
  t.regex((await page.locator('#offer').textContent()) ?? '', /Sold out/);
  t.is(await page.locator('main button').count(), 0, 'nothing to press');
  await axeClean(t, page, 'a product sold out');
});

test('while the last unit is held by another buyer, Buy answers "sold out for now" with when to try again', async (t) => {
  const sku = await suite.sys.createProduct({ name: 'Held pair', stock: 1 });
  const page = await openPage(t);
  await page.goto(`${suite.sys.apiUrl}/p/${sku}`);
  await signInAs(page, 'pages-frank');
  // Another buyer takes the last unit and has not paid yet: it may come back.
  const held = await suite.sys.buy(sku, 'pages-holder');
  t.is(held.status, 201, JSON.stringify(held.body));

  const [answer] = await Promise.all([
    page.waitForResponse((r) => r.url().endsWith(`/p/${sku}/buy`)),
    page.locator('#buy').click(),
  ]);
  t.is(answer.status(), 409);
  t.truthy(answer.headers()['retry-after'], 'Retry-After as the JSON API gives it');
  t.is(await page.locator('h1').textContent(), 'Sold out for now');
  t.regex((await page.locator('#retry').textContent()) ?? '', /^Try again in \d+/);
  t.is(await page.locator('#buyer').textContent(), 'pages-frank', 'the refusal keeps who is signed in');
  t.is(await page.getByRole('link', { name: 'Back to the product' }).getAttribute('href'), `/p/${sku}`);
  t.is(
    await page.locator('#retry time').getAttribute('data-reload'),
    `/p/${sku}`,
    'back to the product when it is time',
  );
  // The wait ticks on the page.
  const retry = (await page.locator('#retry time').textContent()) ?? '';
  await page.waitForFunction((was) => document.querySelector('#retry time')?.textContent !== was, retry);
  await shot(page, 'sold-out-for-now');
  await axeClean(t, page, 'Buy refused: sold out for now');

  await page.goto(`${suite.sys.apiUrl}/p/${sku}`);
  t.is(await page.locator('#offer').getAttribute('data-state'), 'sold_out');
  t.regex((await page.locator('#offer').textContent()) ?? '', /held by another buyer/);
  await axeClean(t, page, 'a product whose last unit is held');
});

test('a declined card, then leaving the checkout, reads "declined: try again" with a button back to the checkout', async (t) => {
  const sku = await suite.sys.createProduct({ name: 'Declined boot' });
  const page = await openPage(t);
  await page.goto(`${suite.sys.apiUrl}/p/${sku}`);
  await signInAs(page, 'pages-carol');
  const purchaseId = await buy(page);
  await Promise.all([
    page.waitForURL((url) => url.searchParams.get('declined') === '1'),
    page.locator('#decline').click(),
  ]);
  await suite.sys.waitForPurchase(purchaseId, (r) => r.reason !== null);
  await Promise.all([
    page.waitForURL((u) => u.pathname === `/purchases/${purchaseId}`),
    page.locator('#cancel').click(),
  ]);
  t.is(await outcome(page).getAttribute('data-status'), 'awaiting_payment');
  t.is(await page.locator('h1').textContent(), 'Your payment was declined: try again');
  t.is(await page.title(), 'Your payment was declined: try again');
  const words = (await outcome(page).textContent()) ?? '';
  t.regex(words, /declined and you left the checkout/);
  t.regex(words, /Nothing was\s+charged/);
  t.is(await page.locator('#pay').textContent(), 'Try again', 'a button back to the checkout');
  t.is(await page.locator('main[data-poll]').count(), 1, 'it keeps looking for news, in place');
  t.is(await page.locator('meta[http-equiv="refresh"]').count(), 0, 'no reload under JavaScript');
  await shot(page, 'purchase-waiting');
  await axeClean(t, page, 'declined: try again');
});

test('an abandoned checkout reads "expired" once the hold lapsed', async (t) => {
  const sku = await suite.sys.createProduct({ name: 'Abandoned cap', holdSeconds: 6 });
  const page = await openPage(t);
  await page.goto(`${suite.sys.apiUrl}/p/${sku}`);
  await signInAs(page, 'pages-dave');
  const purchaseId = await buy(page);
  await suite.sys.waitForPurchase(purchaseId, (p) => p.status === 'expired', 20_000);
  await page.goto(`${suite.sys.apiUrl}/purchases/${purchaseId}`);
  t.is(await outcome(page).getAttribute('data-status'), 'expired');
  t.is(await page.locator('h1').textContent(), 'Your reservation expired');
  t.regex((await outcome(page).textContent()) ?? '', /nothing was charged/);
  t.is(await page.locator('#buy-again').getAttribute('href'), `/p/${sku}`, 'still on sale: a way to buy again');
  await shot(page, 'purchase-expired');
  await axeClean(t, page, 'expired: Buy again');
});

test('Buy, once pressed, says "One moment…" and is busy until the next page comes; back on the page it is Buy again', async (t) => {
  const sku = await suite.sys.createProduct({ name: 'Busy button' });
  const page = await openPage(t);
  await page.goto(`${suite.sys.apiUrl}/p/${sku}`);
  await signInAs(page, 'pages-busy');
  // The test's own submit listener, added after the page's, keeps the form from being sent: the
  // pressed button stays on screen as the page's script left it, with no race against the server.
  // (A string: the test's compiler names arrow functions with a helper the page does not have.)
  await page.evaluate(`(() => {
    const keep = (e) => e.preventDefault();
    document.addEventListener('submit', keep);
    window.letGo = () => document.removeEventListener('submit', keep);
  })()`);
  const buy = page.locator('#buy');
  await buy.click();
  t.is(await buy.getAttribute('aria-busy'), 'true');
  t.is(await buy.textContent(), 'One moment…');
  await axeClean(t, page, 'Buy pressed: busy');
  await shot(page, 'product-busy');
  await page.evaluate('window.letGo()');
  await Promise.all([page.waitForURL((u) => u.pathname.startsWith('/checkout/cs_')), buy.click()]);
  await page.goBack();
  await page.waitForURL(`${suite.sys.apiUrl}/p/${sku}`);
  t.is(await page.locator('#buy').textContent(), 'Buy');
  t.is(await page.locator('#buy').getAttribute('aria-busy'), null);
});

test('a forged buyer cookie is refused and forgotten', async (t) => {
  const sku = await suite.sys.createProduct({ name: 'Forged' });
  const context = await openContext(t);
  const forged = await signBuyerToken('not-the-secret-of-this-api-0123456789', 'pages-mallory');
  await context.addCookies([{ name: 'buyer_token', value: forged, url: suite.sys.apiUrl }]);
  const page = await context.newPage();
  const res = await page.goto(`${suite.sys.apiUrl}/p/${sku}`);
  t.is(res?.status(), 401);
  t.is(await page.locator('h1').textContent(), 'Please sign in');
  t.regex((await page.locator('#notice').textContent()) ?? '', /not valid/);
  t.falsy(
    (await context.cookies()).find((c) => c.name === 'buyer_token' && c.value),
    'the cookie was cleared',
  );
  await shot(page, 'forged-cookie');
  await axeClean(t, page, 'a forged cookie refused');
  // Signed out now: the page shows the product, with a sign-in link instead of Buy.
  await page.reload();
  t.is(await page.locator('#offer').getAttribute('data-state'), 'sign_in');
  const { rows } = await suite.sys.db.query('SELECT count(*)::int AS n FROM purchases WHERE buyer_id = $1', [
    'pages-mallory',
  ]);
  t.is(rows[0].n, 0);
});

test('a product name with markup in it is shown as text on every page, never run', async (t) => {
  const name = '<img src=x onerror="window.pwned=1"><b>Bold</b> & "quoted"';
  const sku = await suite.sys.createProduct({ name });
  const page = await openPage(t);
  let dialogs = 0;
  page.on('dialog', (d) => {
    dialogs++;
    void d.dismiss();
  });
  await page.goto(`${suite.sys.apiUrl}/`);
  t.true((await page.locator('ul.products h2').allTextContents()).includes(name));
  await page.goto(`${suite.sys.apiUrl}/p/${sku}`);
  t.is(await page.locator('h1').textContent(), name);
  t.is(await page.title(), name);
  t.is(await page.locator('main img, main b').count(), 0, 'no element came from the name');
  await signInAs(page, 'pages-erin');
  const purchaseId = await buy(page);
  await page.goto(`${suite.sys.apiUrl}/purchases/${purchaseId}`);
  t.true(((await page.locator('main').textContent()) ?? '').includes(name));
  t.is(await page.locator('main img, main b').count(), 0);
  t.is(await page.evaluate(() => (window as unknown as { pwned?: number }).pwned), undefined);
  await axeClean(t, page, 'a purchase whose product name has markup in it');
  t.is(dialogs, 0);
});

// The bot check on the pages: the `altcha` widget (served from the package) solves the challenge when
// Buy is pressed; with JavaScript off the page says why Buy needs it, and Buy is refused in words.

const purchasesOf = async (sku: string) =>
  (await suite.sys.db.query('SELECT count(*)::int AS n FROM purchases WHERE sku = $1', [sku])).rows[0].n as number;

test('the widget solves the bot check when Buy is pressed, and the hosted page takes the address', async (t) => {
  const sku = await suite.sys.createProduct({ botCheck: true, maxPerAddress: 1, shippingCountries: ['FR', 'DE'] });
  const page = await openPage(t);
  await page.goto(`${suite.sys.apiUrl}/p/${sku}`);
  await signInAs(page, 'widget-ann');
  t.is(await page.locator('altcha-widget').count(), 1);
  t.false(await page.locator('#bot-check-noscript').isVisible());
  await axeClean(t, page, 'a product with the bot check');
  t.is(
    await page.getByText('Protected by ALTCHA').count(),
    0,
    'no footer: the widget is configured as altcha 3.2 reads it',
  );
  // Solved when the page loaded, before Buy is pressed.
  await page.waitForFunction(() =>
    Boolean((document.querySelector('input[name="altcha"]') as HTMLInputElement)?.value),
  );
  await Promise.all([page.waitForURL((u) => u.pathname.startsWith('/checkout/cs_')), page.locator('#buy').click()]);
  t.is(await purchasesOf(sku), 1);

  // The hosted page asks where to ship, in the product's countries.
  await page.locator('#shipping-name').fill('Ann Widget');
  await page.locator('#shipping-line1').fill('12 Rue de la Paix');
  await page.locator('#shipping-city').fill('Paris');
  await page.locator('#shipping-postal-code').fill('75002');
  await page.locator('#shipping-country').selectOption('FR');
  await Promise.all([page.waitForURL((u) => u.pathname.startsWith('/purchases/')), page.locator('#pay').click()]);
  await page.waitForSelector('#outcome[data-status="confirmed"]', { timeout: 30_000 });
  const { rows } = await suite.sys.db.query('SELECT address_key FROM purchases WHERE sku = $1', [sku]);
  t.regex(rows[0].address_key, /^[0-9a-f]{64}$/);
  // The receipt says where it ships (read from the session at confirmation) and when it was confirmed.
  await page.reload();
  t.deepEqual((await page.locator('#ships-to').innerText()).split('\n'), [
    'Ann Widget',
    '12 Rue de la Paix',
    '75002 Paris',
    'FR',
  ]);
  t.regex((await page.locator('#confirmed-at').textContent()) ?? '', /^\d{1,2} \w{3} \d{4}, \d\d:\d\d UTC$/);
  t.regex((await page.locator('#next').textContent()) ?? '', /your order is sent to this address/);
  await axeClean(t, page, 'confirmed, with where it ships');
  await shot(page, 'purchase-receipt');
});

test('with JavaScript off the page says why Buy needs it, and Buy is refused in words with nothing written', async (t) => {
  const sku = await suite.sys.createProduct({ botCheck: true });
  const page = await openPage(t, false);
  await page.goto(`${suite.sys.apiUrl}/p/${sku}`);
  await signInAs(page, 'widget-ben');
  const why = page.locator('#bot-check-noscript');
  t.true(await why.isVisible());
  t.regex((await why.textContent()) ?? '', /needs JavaScript/);
  const [answer] = await Promise.all([
    page.waitForResponse((r) => r.url().endsWith('/buy')),
    page.locator('#buy').click(),
  ]);
  t.is(answer.status(), 403);
  t.regex((await page.locator('main').textContent()) ?? '', /needs JavaScript/);
  t.is(await purchasesOf(sku), 0);
});
