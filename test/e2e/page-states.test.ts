import { randomUUID } from 'node:crypto';
import test, { type ExecutionContext } from 'ava';
import type { Page } from 'playwright-core';
import { supportRefundFailedAfterSagaEnded } from '../helpers/attention';
import { asBuyer } from '../helpers/credentials';
import { axeClean, pageSuite, ROOM_PAGES_SYSTEM } from '../helpers/page-suite';
import { sessionOf } from '../helpers/system';

// The states of the buyer's pages the journeys of buyer-pages, room-pages and honest-pages do not
// pass through, each reached for real in Chromium at a phone's size, with axe-core on each (issue 32:
// axe on every state): "confirming your payment" and its update in place, My purchases, a failed
// bank debit, a late sale, the refusals a Buy may meet (already reserved, over the limit), a page
// that does not exist, money waiting for support, and a turn that passed.

const suite = pageSuite(test, ROOM_PAGES_SYSTEM);

/** `buyer` buys `sku` over the JSON API; the purchase id and its Checkout Session. */
async function bought(sku: string, buyer: string): Promise<{ purchaseId: string; sessionId: string }> {
  const res = await suite.sys.buy(sku, buyer);
  if (res.status !== 201) throw new Error(`${buyer} buying: ${res.status} ${JSON.stringify(res.body)}`);
  return { purchaseId: res.body.purchaseId, sessionId: await sessionOf(suite.sys.db, res.body.purchaseId) };
}

async function purchasePage(t: ExecutionContext, buyer: string, purchaseId: string, query = ''): Promise<Page> {
  const page = await suite.page(t, { buyer });
  await page.goto(`${suite.sys.apiUrl}/purchases/${purchaseId}${query}`);
  return page;
}

// Serial: it holds the emulator's webhooks back, which every test of this file shares.
test.serial('back from paying before the webhook: "Confirming your payment", then confirmed in place', async (t) => {
  const sku = await suite.sys.createProduct({ name: 'Confirming cap' });
  const { purchaseId, sessionId } = await bought(sku, 'ps-ann');
  t.is((await suite.sys.emulatorCall('POST', '/_emulator/webhooks', { pause: true })).status, 200);
  t.teardown(() => suite.sys.emulatorCall('POST', '/_emulator/webhooks', { pause: false }));
  t.is((await suite.sys.pay(sessionId, 'succeeded')).status, 200);
  // Where Checkout's success URL brings the buyer back.
  const page = await purchasePage(t, 'ps-ann', purchaseId, '?result=paid');
  t.is(await page.locator('h1').textContent(), 'Confirming your payment');
  t.is(await page.locator('#pay').count(), 0, 'no second payment offered');
  await axeClean(t, page, 'confirming your payment');

  t.is((await suite.sys.emulatorCall('POST', '/_emulator/webhooks', { pause: false })).status, 200);
  await page.waitForSelector('#outcome[data-status="confirmed"]');
  t.regex((await page.locator('#announce').textContent()) ?? '', /confirmed/, 'read out once');
  await axeClean(t, page, 'confirmed in place');

  // My purchases lists it; a buyer with none is told so.
  await page.goto(`${suite.sys.apiUrl}/purchases`);
  t.is(await page.locator(`#purchases a[href="/purchases/${purchaseId}"]`).count(), 1);
  await axeClean(t, page, 'My purchases');
  const none = await suite.page(t, { buyer: 'ps-nobody' });
  await none.goto(`${suite.sys.apiUrl}/purchases`);
  t.regex((await none.locator('#purchases').textContent()) ?? '', /no purchases yet/);
  await axeClean(t, none, 'My purchases, none');
});

test('a bank debit that fails reads "The payment failed", with a way to buy again', async (t) => {
  const sku = await suite.sys.createProduct({ name: 'Failing debit' });
  const { purchaseId, sessionId } = await bought(sku, 'ps-ben');
  await suite.sys.pay(sessionId, 'async_pending');
  await suite.sys.waitForPurchase(purchaseId, (r) => r.settling_at !== null);
  await suite.sys.pay(sessionId, 'async_failed');
  await suite.sys.waitForPurchase(purchaseId, (r) => r.status === 'payment_failed');
  const page = await purchasePage(t, 'ps-ben', purchaseId);
  t.is(await page.locator('h1').textContent(), 'The payment failed');
  t.is(await page.locator('#buy-again').getAttribute('href'), `/p/${sku}`);
  await axeClean(t, page, 'the payment failed');
});

test('a payment after the reservation ended, its unit still there, is a late sale', async (t) => {
  const sku = await suite.sys.createProduct({ name: 'Late jacket', holdSeconds: 6 });
  const { purchaseId, sessionId } = await bought(sku, 'ps-cy');
  await suite.sys.waitForPurchase(purchaseId, (r) => r.status === 'expired', 20_000);
  t.is((await suite.sys.pay(sessionId, 'succeeded', { force: true })).status, 200);
  await suite.sys.waitForPurchase(purchaseId, (r) => r.status === 'late_confirmed');
  const page = await purchasePage(t, 'ps-cy', purchaseId);
  t.regex((await page.locator('#outcome').textContent()) ?? '', /arrived after your reservation had ended/);
  t.regex((await page.locator('#next').textContent()) ?? '', /This page is your receipt/);
  await axeClean(t, page, 'a late sale');
});

test('the refusals a Buy may meet are pages in words: already reserved, more than the limit', async (t) => {
  const sku = await suite.sys.createProduct({
    name: 'Capped hoodie',
    maxPerBuyer: 3,
    maxPerAddress: 2,
    shippingCountries: ['FR'],
  });
  const page = await suite.page(t, { buyer: 'ps-dee' });
  await page.goto(`${suite.sys.apiUrl}/p/${sku}`);
  // More than one address may take: the field's cap is lifted, as a crafted form would.
  await page.locator('#quantity').evaluate((el) => el.removeAttribute('max'));
  await page.locator('#quantity').fill('3');
  const [limit] = await Promise.all([
    page.waitForResponse((r) => r.url().endsWith(`/p/${sku}/buy`)),
    page.locator('#buy').click(),
  ]);
  t.is(limit.status(), 422);
  t.regex((await page.locator('main').textContent()) ?? '', /limited to 2 per shipping address\. Choose 2 or fewer/);
  await axeClean(t, page, 'Buy refused: over the limit');

  // Reserved over the API, then Buy on the page: already reserved, with the way to that purchase.
  const first = await bought(sku, 'ps-dee');
  await page.goto(`${suite.sys.apiUrl}/p/${sku}`);
  const [held] = await Promise.all([
    page.waitForResponse((r) => r.url().endsWith(`/p/${sku}/buy`)),
    page.locator('#buy').click(),
  ]);
  t.is(held.status(), 409);
  t.is(
    await page.getByRole('link', { name: 'Your reserved purchase' }).getAttribute('href'),
    `/purchases/${first.purchaseId}`,
  );
  await axeClean(t, page, 'Buy refused: already reserved');

  const missing = await page.goto(`${suite.sys.apiUrl}/p/no-such-${randomUUID()}`);
  t.is(missing?.status(), 404);
  await axeClean(t, page, 'no such product');
});

test('money that waits for support reads "needs attention", with the failed refund in words', async (t) => {
  const { purchaseId } = await supportRefundFailedAfterSagaEnded(suite.sys, 'ps-fay');
  const page = await purchasePage(t, 'ps-fay', purchaseId);
  t.is(await page.locator('h1').textContent(), 'Your purchase needs attention');
  t.regex((await page.locator('#refund').textContent()) ?? '', /failed; support will make it by hand/);
  await axeClean(t, page, 'needs attention, a refund failed');
});

test('a turn that passed unused reads so on the queue page', async (t) => {
  const sku = await suite.sys.createProduct({
    name: 'Passed turn tee',
    stock: 2,
    waitingRoom: { admitPerSecond: 5, maxActive: 5, sessionSeconds: 1 },
  });
  const ticket = await suite.ticketOf(sku, 'ps-eve');
  await suite.pollUntil(ticket, (b) => b.state === 'expired');
  const page = await suite.page(t, { buyer: 'ps-eve' });
  await page.goto(`${suite.sys.apiUrl}/queue/${encodeURIComponent(ticket)}`);
  t.is(await page.locator('#queue').getAttribute('data-state'), 'expired');
  await axeClean(t, page, 'a turn that passed');
  // Buying with the lapsed admission is refused over the API too.
  const res = await suite.sys.api(
    'POST',
    '/v1/purchases',
    { sku },
    { 'idempotency-key': randomUUID(), ...(await asBuyer('ps-eve')) },
  );
  t.is(res.status, 403);
});
