import test, { type ExecutionContext } from 'ava';
import type { Browser, Page } from 'playwright-core';
import { launchBrowser } from '../helpers/browser';
import { buyerToken, startSystem, type System } from '../helpers/system';

// A buyer in Chromium on the payments emulator's hosted checkout page, against the whole system: the API
// that answers POST /v1/purchases, the purchase saga on its worker, Postgres, and the emulator's webhooks.

let sys: System;
let browser: Browser;
test.before(async () => {
  [sys, browser] = await Promise.all([startSystem(), launchBrowser()]);
});
test.after.always(async () => {
  await browser?.close();
  await sys?.close();
});

/** A fresh browser context per test (no shared cookies or cache), closed when the test ends; signed in as `buyerId`. */
async function openPage(t: ExecutionContext, buyerId?: string): Promise<Page> {
  const context = await browser.newContext();
  t.teardown(() => context.close());
  // The shop's site hands the buyer token over as the pages' cookie.
  if (buyerId) await context.addCookies([{ name: 'buyer_token', value: await buyerToken(buyerId), url: sys.apiUrl }]);
  const page = await context.newPage();
  page.setDefaultTimeout(15_000);
  return page;
}

async function pageStatus(page: Page): Promise<string | null> {
  return page.locator('#status').getAttribute('data-status');
}

test('a buyer who pays on the hosted page lands on the success URL and the purchase is confirmed', async (t) => {
  const sku = await sys.createProduct({ name: 'Aurora runner', priceCents: 12_900 });
  const res = await sys.buy(sku, 'page-alice');
  t.is(res.status, 201, JSON.stringify(res.body));
  const { purchaseId, checkoutUrl } = res.body;

  const page = await openPage(t, 'page-alice');
  await page.goto(checkoutUrl);
  t.is(await page.title(), 'Checkout · Aurora runner');
  t.is(await page.locator('.items .name').textContent(), 'Aurora runner');
  t.is(await page.locator('#amount').textContent(), '$129.00');
  t.is(await pageStatus(page), 'open');

  const successUrl = `${sys.apiUrl}/purchases/${purchaseId}?result=paid`;
  const [landing] = await Promise.all([page.waitForResponse(successUrl), page.locator('#pay').click()]);
  await page.waitForURL(successUrl);
  t.is(landing.status(), 200);
  // The webhook races the redirect: the page shows the purchase, confirmed or still being confirmed.
  t.is(await page.locator('#purchase').textContent(), purchaseId);

  await sys.waitForPurchase(purchaseId, (p) => p.status === 'confirmed');
  t.like(await sys.stock(sku), { available: 4, held: 0, sold: 1 });
});

test('a buyer whose card is declined sees the decline, tries again on the same page and is confirmed', async (t) => {
  const sku = await sys.createProduct();
  const res = await sys.buy(sku, 'page-bob');
  t.is(res.status, 201, JSON.stringify(res.body));
  const { purchaseId, checkoutUrl } = res.body;

  const page = await openPage(t, 'page-bob');
  await page.goto(checkoutUrl);
  await Promise.all([
    page.waitForURL((url) => url.searchParams.get('declined') === '1'),
    page.locator('#decline').click(),
  ]);
  t.is(
    await page.getByRole('alert').textContent(),
    'Your card was declined. Try again, or use another payment method.',
  );
  const p = await sys.waitForPurchase(purchaseId, (r) => r.reason !== null);
  t.is(p.status, 'awaiting_payment', 'the hold is kept after a decline');
  t.like(await sys.stock(sku), { held: 1 });

  await Promise.all([
    page.waitForURL((url) => url.pathname === `/purchases/${purchaseId}`),
    page.locator('#pay').click(),
  ]);
  await sys.waitForPurchase(purchaseId, (r) => r.status === 'confirmed');
  t.like(await sys.stock(sku), { available: 4, held: 0, sold: 1 });
});

test('after the hold lapses, reloading the page shows the session expired and nothing to pay with', async (t) => {
  // Long enough for the page to open while the session is still open on a loaded machine.
  const sku = await sys.createProduct({ holdSeconds: 6 });
  const res = await sys.buy(sku, 'page-carol');
  t.is(res.status, 201, JSON.stringify(res.body));
  const { purchaseId, checkoutUrl } = res.body;

  const page = await openPage(t);
  await page.goto(checkoutUrl);
  t.is(await pageStatus(page), 'open');
  t.true(await page.locator('#pay').isEnabled());

  await sys.waitForPurchase(purchaseId, (p) => p.status === 'expired', 20_000);
  await page.reload();
  t.is(await pageStatus(page), 'expired');
  t.is(await page.locator('#status').textContent(), 'This checkout session has expired');
  t.is(await page.locator('#pay').count(), 0);
  t.is(await page.getByRole('button').count(), 0, 'no button of any kind is left to pay with');
});
