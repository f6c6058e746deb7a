import test, { type ExecutionContext } from 'ava';
import { supportRefundFailedAfterSagaEnded } from '../helpers/attention';
import { follow, onCheckout, onPurchase, press, reloadOf, reloads, words } from '../helpers/no-script';
import { axeClean, pageSuite, ROOM_PAGES_SYSTEM } from '../helpers/page-suite';
import { sessionOf } from '../helpers/system';
import { sessionIdOfCheckoutUrl } from '@flash-sale/stripe-emulator';

// More of issue 32's buyer states with JavaScript off, at a phone's size (no-script-states.test.ts
// walks the first ones, no-script-room-states.test.ts the waiting room's, no-script-checkout-line
// the checkout line's): a payment that goes through after a declined one, a bank debit settling then
// failing, a late sale, money waiting for support, and a Buy refused because the buyer already holds
// one. Each page says its state in words and leaves a way on made of links and plain forms; a page
// waiting for news reloads itself from <noscript>, and the tests wait for what that reload brings.

const suite = pageSuite(test, ROOM_PAGES_SYSTEM);

const noScript = (t: ExecutionContext, buyer: string) => suite.page(t, { js: false, buyer });
const at = (path: string) => `${suite.sys.apiUrl}${path}`;

/** `buyer` buys `sku` over the JSON API; the purchase id and its Checkout Session. */
async function bought(sku: string, buyer: string): Promise<{ purchaseId: string; sessionId: string }> {
  const res = await suite.sys.buy(sku, buyer);
  if (res.status !== 201) throw new Error(`${buyer} buying: ${res.status} ${JSON.stringify(res.body)}`);
  return { purchaseId: res.body.purchaseId, sessionId: await sessionOf(suite.sys.db, res.body.purchaseId) };
}

// Serial: it holds the emulator's webhooks back, which every test of this file shares (serial tests
// run before the others).
test.serial(
  'declined, then paid on Stripe’s page: back before the webhook the buyer reads "Confirming your payment", not "declined: try again"',
  async (t) => {
    const sku = await suite.sys.createProduct({ name: 'Second-card parka', priceCents: 6_000 });
    const page = await noScript(t, 'nm-ann');
    await page.goto(at(`/p/${sku}`));
    await press(page, '#buy', onCheckout);
    const sessionId = sessionIdOfCheckoutUrl(page.url());
    const { rows } = await suite.sys.db.query('SELECT purchase_id FROM purchases WHERE checkout_session_id = $1', [
      sessionId,
    ]);
    const purchaseId = rows[0].purchase_id as string;
    await press(page, '#decline', (u) => u.searchParams.get('declined') === '1');
    // The decline is on the purchase (its webhook landed) before the next payment's is held back.
    await suite.sys.waitForPurchase(purchaseId, (r) => r.reason !== null && r.reason.includes('declined'));

    t.is((await suite.sys.emulatorCall('POST', '/_emulator/webhooks', { pause: true })).status, 200);
    t.teardown(() => suite.sys.emulatorCall('POST', '/_emulator/webhooks', { pause: false }));
    await press(page, '#pay', onPurchase);
    const back = new URL(page.url());
    t.is(back.pathname, `/purchases/${purchaseId}`);
    t.is(back.searchParams.get('result'), 'paid', 'Checkout’s success return says the buyer has just paid');
    t.is(await page.locator('h1').textContent(), 'Confirming your payment');
    t.regex(await words(page, '#outcome'), /^You have just paid: your payment is being confirmed/);
    t.notRegex(await words(page), /declined|try again|checkout/i, 'the old decline is not the news');
    t.is(await page.locator('#pay').count(), 0, 'no second payment offered');
    t.is(await reloadOf(page), '2', 'news within seconds: the <noscript> reload');
    t.is((await suite.sys.purchase(purchaseId)).body.status, 'awaiting_payment', 'the webhook is still held back');

    // The same return with JavaScript on, axe on it.
    const withJs = await suite.page(t, { buyer: 'nm-ann' });
    await withJs.goto(back.href);
    t.is(await withJs.locator('h1').textContent(), 'Confirming your payment');
    await axeClean(t, withJs, 'confirming after a decline');

    t.is((await suite.sys.emulatorCall('POST', '/_emulator/webhooks', { pause: false })).status, 200);
    await page.waitForSelector('#outcome[data-status="confirmed"]');
    t.regex(await words(page, '#outcome'), /you paid \$60\.00\. Thank you!/);
    await withJs.waitForSelector('#outcome[data-status="confirmed"]');
  },
);

test('a bank debit: settling with nothing to pay and a slow reload, then "The payment failed" with Buy again', async (t) => {
  const sku = await suite.sys.createProduct({ name: 'Debit kettle', currency: 'eur', priceCents: 4_900 });
  const { purchaseId, sessionId } = await bought(sku, 'nm-ben');
  t.is((await suite.sys.pay(sessionId, 'async_pending')).status, 200);
  await suite.sys.waitForPurchase(purchaseId, (r) => r.settling_at !== null);
  const page = await noScript(t, 'nm-ben');
  await page.goto(at(`/purchases/${purchaseId}`));
  t.is(await page.locator('h1').textContent(), 'Your bank payment is being confirmed');
  const settling = await words(page, '#outcome');
  t.regex(settling, /^You paid by bank debit on .*\d\d:\d\d UTC.*there is nothing more for you to do/);
  t.regex(settling, /Come back to this page to see the outcome\.$/);
  t.is(await page.locator('#pay').count(), 0, 'nothing to pay');
  t.is(await reloadOf(page), '300', 'it looks again every 5 minutes, not every few seconds');
  t.is(await page.locator('#order a').getAttribute('href'), `/p/${sku}`, 'the product is a link away');

  t.is((await suite.sys.pay(sessionId, 'async_failed')).status, 200);
  await suite.sys.waitForPurchase(purchaseId, (r) => r.status === 'payment_failed');
  // The buyer comes back to the page, as it asks.
  await page.goto(at(`/purchases/${purchaseId}`));
  t.is(await page.locator('h1').textContent(), 'The payment failed');
  t.regex(
    await words(page, '#outcome'),
    /^The payment failed \(.+\); nothing was charged and the item went back on sale\.$/,
  );
  t.false(await reloads(page), 'a final state stays put');
  await press(page, '#buy-again', (u) => u.pathname === `/p/${sku}`);
  t.is(await page.locator('#offer').getAttribute('data-state'), 'buy');
  await press(page, '#buy', onCheckout);
});

test('a payment after the reservation ended, its unit still there, reads as a late sale: the receipt, listed under My purchases', async (t) => {
  const sku = await suite.sys.createProduct({ name: 'Late kettle', holdSeconds: 6, priceCents: 3_000 });
  const { purchaseId, sessionId } = await bought(sku, 'nm-cy');
  await suite.sys.waitForPurchase(purchaseId, (r) => r.status === 'expired', 20_000);
  t.is((await suite.sys.pay(sessionId, 'succeeded', { force: true })).status, 200);
  await suite.sys.waitForPurchase(purchaseId, (r) => r.status === 'late_confirmed');
  const page = await noScript(t, 'nm-cy');
  await page.goto(at(`/purchases/${purchaseId}`));
  t.is(await page.locator('h1').textContent(), 'Your purchase is confirmed');
  t.is(
    await words(page, '#outcome'),
    'Your purchase is confirmed. Thank you! Your payment arrived after your reservation had ended, but the item was still there, so it is yours.',
  );
  t.regex(await words(page, '#next'), /This page is your receipt: you find it again under My purchases/);
  t.is(await page.locator('#pay').count(), 0);
  t.false(await reloads(page), 'a receipt stays put');
  await press(page, '#my-purchases', (u) => u.pathname === '/purchases');
  const row = page.locator('#purchases li').filter({ has: page.locator(`a[href="/purchases/${purchaseId}"]`) });
  t.regex(await words(page, row), /^1 × Late kettle Your purchase is confirmed, \$30\.00 · bought /);
});

test('money that waits for support reads "needs attention" with the failed refund in words, and leads on to the product and My purchases', async (t) => {
  const { sku, purchaseId } = await supportRefundFailedAfterSagaEnded(suite.sys, 'nm-dee');
  const page = await noScript(t, 'nm-dee');
  await page.goto(at(`/purchases/${purchaseId}`));
  t.is(await page.locator('h1').textContent(), 'Your purchase needs attention');
  t.regex(
    await words(page, '#outcome'),
    /could not be settled automatically\. Our support team has been told and will sort it out: you will not be charged twice/,
  );
  t.regex(await words(page, '#refund'), /failed; support will make it by hand\. Why: wrong size shipped\.$/);
  t.is(await page.locator('#pay').count(), 0, 'nothing to pay');
  t.false(await reloads(page), 'its news is support’s: no reload');
  t.is(await page.locator('#my-purchases').getAttribute('href'), '/purchases');
  await press(page, '#order a', (u) => u.pathname === `/p/${sku}`);
  t.is(await page.locator('h1').count(), 1);
});

test('a second Buy by a buyer who holds one is refused in words, and its link leads to the reserved purchase, paid from there', async (t) => {
  const sku = await suite.sys.createProduct({ name: 'Held scarf', priceCents: 2_500 });
  const first = await bought(sku, 'nm-eve');
  const page = await noScript(t, 'nm-eve');
  await page.goto(at(`/p/${sku}`));
  const [answer] = await Promise.all([
    page.waitForResponse((r) => r.url().endsWith(`/p/${sku}/buy`)),
    page.waitForURL((u) => u.pathname === `/p/${sku}/buy`),
    page.locator('#buy').click(),
  ]);
  t.is(answer.status(), 409);
  t.is(await page.locator('h1').textContent(), 'You already have one reserved');
  t.regex(await words(page, '#notice'), /^You already hold this product in another purchase/);
  t.is(await page.locator('#buyer').textContent(), 'nm-eve', 'the header keeps who is signed in');
  await press(page, 'a:text-is("Your reserved purchase")', (u) => u.pathname === `/purchases/${first.purchaseId}`);

  // Not back from paying: the reserved purchase offers its checkout (no dead end), and reloads slowly.
  t.is(await page.locator('h1').textContent(), 'Your item is reserved');
  t.regex(
    await words(page, '#outcome'),
    /^Pay on the checkout to complete the purchase; the reservation ends in \d+ min/,
  );
  t.is(await page.locator('#pay').textContent(), 'Go to the checkout');
  t.is(await reloadOf(page), '30', 'the next step is the buyer’s');
  const withJs = await suite.page(t, { buyer: 'nm-eve' });
  await withJs.goto(page.url());
  t.is(await withJs.locator('h1').textContent(), 'Your item is reserved');
  await axeClean(t, withJs, 'your item is reserved');
  await follow(page, '#pay', onCheckout);
  t.is(new URL(page.url()).pathname, `/checkout/${first.sessionId}`, 'the same checkout');
  await press(page, '#pay', (u) => u.pathname === `/purchases/${first.purchaseId}`);
  await page.waitForSelector('#outcome[data-status="confirmed"]');
  t.regex(await words(page, '#outcome'), /you paid \$25\.00/);
});
