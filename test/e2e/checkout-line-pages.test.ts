import test from 'ava';
import { axeClean, pageSuite } from '../helpers/page-suite';

// A purchase whose Checkout Session waits for its turn in the Stripe budget, in Chromium at a phone's
// size with axe-core (issue 32, item 12): "Preparing your checkout" with the buyers ahead and the
// wait, then "Your checkout is ready" and on to the payment page by itself once the session opens. The budget is slow (one
// checkout every 18 s, on a database of this file's own), so the second buyer's turn is far enough
// off for the page to be seen before it.

const suite = pageSuite(test, { ownDatabase: true, devSignIn: true, checkoutsPerSecond: 0.05 });

test('a checkout waiting for its turn reads "Preparing your checkout", then "ready", and goes on to pay by itself', async (t) => {
  const sku = await suite.sys.createProduct({ name: 'Line sneaker', stock: 5 });
  // The first buyer takes the budget's next turn; the second's comes one turn later.
  const first = await suite.sys.buy(sku, 'cl-first');
  t.true([201, 202].includes(first.status), JSON.stringify(first.body));

  const page = await suite.page(t, { buyer: 'cl-second', timeoutMs: 60_000 });
  await page.goto(`${suite.sys.apiUrl}/p/${sku}`);
  await Promise.all([page.waitForURL((u) => u.pathname.startsWith('/purchases/')), page.locator('#buy').click()]);
  t.is(new URL(page.url()).searchParams.get('then'), 'pay');
  t.is(await page.locator('h1').textContent(), 'Preparing your checkout');
  t.regex((await page.locator('#outcome').textContent()) ?? '', /(You are next|buyers? (is|are) ahead of you), about/);
  t.is(await page.locator('#pay').count(), 0, 'nothing to pay yet');
  await axeClean(t, page, 'preparing your checkout');

  // The turn comes: the page says the checkout is ready and takes the buyer on by itself. The first
  // way on is answered 204 (a browser stays on the page), so the ready state can be looked at.
  // The page goes on half a second after it shows the ready state, which can be after axe is done:
  // the test waits for the way on itself, not for a count at one instant.
  let wentOn!: () => void;
  const wentOnce = new Promise<void>((resolve) => (wentOn = resolve));
  await page.route('**/checkout/cs_*', async (route) => {
    wentOn();
    await route.fulfill({ status: 204 });
  });
  await page.waitForSelector('h1:text("Your checkout is ready")');
  await page.waitForFunction(() => document.title === 'Your checkout is ready');
  t.regex((await page.locator('#pay').getAttribute('href')) ?? '', /\/checkout\/cs_/);
  await axeClean(t, page, 'your checkout is ready');
  const went = await Promise.race([
    wentOnce.then(() => true),
    new Promise<boolean>((resolve) => setTimeout(() => resolve(false), 15_000)),
  ]);
  await page.unroute('**/checkout/cs_*');
  t.true(went, 'it went on by itself within 15 s of showing the ready state');
  await Promise.all([page.waitForURL((u) => u.pathname.startsWith('/checkout/cs_')), page.locator('#pay').click()]);
});
