import test, { type ExecutionContext } from 'ava';
import { signInAs } from '../helpers/browser';
import { AS_SUPPORT } from '../helpers/credentials';
import {
  follow,
  onCheckout,
  onPurchase,
  press,
  purchaseIdOf,
  reloadOf,
  reloads,
  titleOf,
  words,
} from '../helpers/no-script';
import { pageSuite, ROOM_PAGES_SYSTEM } from '../helpers/page-suite';
import { sellTo, sessionOf } from '../helpers/system';

// Issue 32's buyer states with JavaScript off, at a phone's size, against the whole system: each page
// says its state in words, and the buyer acts with links and plain forms alone (sign in, Buy on to
// Stripe's hosted page on the emulator, back to the shop, try again, pay, Join the queue, Buy in
// turn). A page still waiting for news reloads itself from <noscript>: the tests wait for what that
// reload brings, they never reload. The same states with JavaScript on, and axe-core on each, are
// buyer-pages', page-states', honest-pages' and room-pages'; the other states with JavaScript off are
// no-script-more-states', no-script-room-states' and no-script-checkout-line's.

const suite = pageSuite(test, ROOM_PAGES_SYSTEM);

/** A page with JavaScript off, at a phone's size (the suite's default), signed in as `buyer` when given. */
const noScript = (t: ExecutionContext, buyer?: string) => suite.page(t, { js: false, ...(buyer ? { buyer } : {}) });

const at = (path: string) => `${suite.sys.apiUrl}${path}`;

// Serial: it holds the emulator's webhooks back, which every test of this file shares (serial tests
// run before the others).
test.serial(
  'signed out, then in: Buy goes on to Stripe’s page; back before the webhook, "Confirming your payment" reloads itself into the receipt, listed under My purchases',
  async (t) => {
    const sku = await suite.sys.createProduct({ name: 'Quiet runner', priceCents: 12_900 });
    const page = await noScript(t);
    await page.goto(at(`/p/${sku}`));
    t.is(await page.locator('h1').textContent(), 'Quiet runner');
    t.is(await words(page, '#price'), '$129.00');
    t.is(await page.locator('#offer').getAttribute('data-state'), 'sign_in');
    t.is(await words(page, '#offer'), 'Sign in to buy');
    t.is(await page.locator('#buy').count(), 0, 'no Buy signed out');

    await signInAs(page, 'ns-ann');
    t.is(await page.locator('#buyer').textContent(), 'ns-ann');
    t.is(await page.locator('#offer').getAttribute('data-state'), 'buy');
    t.is(await page.locator('#buy').textContent(), 'Buy');
    // Buy is a plain form: its POST answers 303 to Stripe's hosted page.
    await press(page, '#buy', onCheckout);
    t.is(await page.title(), 'Checkout · Quiet runner');

    t.is((await suite.sys.emulatorCall('POST', '/_emulator/webhooks', { pause: true })).status, 200);
    t.teardown(() => suite.sys.emulatorCall('POST', '/_emulator/webhooks', { pause: false }));
    await press(page, '#pay', onPurchase);
    const purchaseId = purchaseIdOf(page);
    t.is(await page.locator('h1').textContent(), 'Confirming your payment');
    t.regex(await words(page, '#outcome'), /being confirmed with the payment provider.*shows the outcome by itself/);
    t.notRegex(await words(page), /checkout|Try again/i, 'no second payment offered');
    t.is(await reloadOf(page), '2', 'the <noscript> reload');

    t.is((await suite.sys.emulatorCall('POST', '/_emulator/webhooks', { pause: false })).status, 200);
    await page.waitForSelector('#outcome[data-status="confirmed"]');
    t.is(await page.locator('h1').textContent(), 'Your purchase is confirmed');
    t.regex(await words(page, '#outcome'), /you paid \$129\.00\. Thank you!/);
    t.regex(await words(page, '#confirmed-at'), /^\d{1,2} \w{3} \d{4}, \d\d:\d\d UTC$/);
    t.regex(await words(page, '#next'), /This page is your receipt: you find it again under My purchases/);
    t.false(await reloads(page), 'a receipt stays put');

    await press(page, '#my-purchases', (u) => u.pathname === '/purchases');
    t.is(await page.locator('h1').textContent(), 'My purchases');
    const row = page.locator('#purchases li').filter({ has: page.locator(`a[href="/purchases/${purchaseId}"]`) });
    t.regex(
      await words(page, row),
      /^1 × Quiet runner Your purchase is confirmed, \$129\.00 · bought .*\d\d:\d\d UTC$/,
    );
  },
);

test('leaving the checkout reads "You have not paid yet", a declined card "declined: try again", each with a button back to the checkout, and paying from there confirms', async (t) => {
  const sku = await suite.sys.createProduct({ name: 'Second-go boot', priceCents: 8_000 });
  const page = await noScript(t, 'ns-ben');
  await page.goto(at(`/p/${sku}`));
  await press(page, '#buy', onCheckout);
  // "Back to the shop", Checkout's cancel link.
  await press(page, '#cancel', onPurchase);
  const purchaseId = purchaseIdOf(page);
  t.is(await page.locator('h1').textContent(), 'You have not paid yet');
  t.regex(
    await words(page, '#outcome'),
    /^You left the checkout without paying\. .*ends in (9|10) min.*\d\d:\d\d UTC\)\.$/,
  );
  t.is(await page.locator('#pay').textContent(), 'Go back to the checkout');
  t.is(await reloadOf(page), '30', 'it reloads itself, slowly: the next step is the buyer’s');

  await follow(page, '#pay', onCheckout);
  await press(page, '#decline', (u) => u.searchParams.get('declined') === '1');
  await suite.sys.waitForPurchase(purchaseId, (r) => r.reason !== null);
  await press(page, '#cancel', onPurchase);
  t.is(await page.locator('h1').textContent(), 'Your payment was declined: try again');
  const declined = await words(page, '#outcome');
  t.regex(declined, /declined and you left the checkout\. Nothing was charged\./);
  t.regex(declined, /reservation ends in (9|10) min/);
  t.is(await page.locator('#pay').textContent(), 'Try again');
  t.is(await reloadOf(page), '30');

  await follow(page, '#pay', onCheckout);
  await press(page, '#pay', (u) => u.pathname === `/purchases/${purchaseId}`);
  await page.waitForSelector('#outcome[data-status="confirmed"]');
  t.regex(await words(page, '#outcome'), /you paid \$80\.00/);
});

test('a lapsed reservation reads "expired", and its Buy again leads to a Buy form', async (t) => {
  const sku = await suite.sys.createProduct({ name: 'Lapsed cap', holdSeconds: 6 });
  const bought = await suite.sys.buy(sku, 'ns-cy');
  t.is(bought.status, 201, JSON.stringify(bought.body));
  await suite.sys.waitForPurchase(bought.body.purchaseId, (r) => r.status === 'expired', 20_000);
  const page = await noScript(t, 'ns-cy');
  await page.goto(at(`/purchases/${bought.body.purchaseId}`));
  t.is(await page.locator('h1').textContent(), 'Your reservation expired');
  t.regex(await words(page, '#outcome'), /nothing was charged and the item went back on sale/);
  t.false(await reloads(page));
  await press(page, '#buy-again', (u) => u.pathname === `/p/${sku}`);
  t.is(await page.locator('#offer').getAttribute('data-state'), 'buy');
  await press(page, '#buy', onCheckout);
});

test('a refund reads in words: the amount, the product, when the money comes back, and why', async (t) => {
  const sku = await suite.sys.createProduct({ name: 'Returned scarf', priceCents: 4_500 });
  const { purchaseId } = await sellTo(suite.sys, sku, 'ns-dee');
  const why = 'the scarf was damaged in the warehouse';
  const asked = await suite.sys.api(
    'POST',
    `/v1/support/purchases/${purchaseId}/refund`,
    { reason: why, restock: false },
    AS_SUPPORT,
  );
  t.is(asked.status, 202, JSON.stringify(asked.body));
  await suite.sys.waitForPurchase(purchaseId, (r) => r.status === 'refunded');
  const page = await noScript(t, 'ns-dee');
  await page.goto(at(`/purchases/${purchaseId}`));
  t.is(await page.locator('h1').textContent(), 'Refunded');
  const refunded = await words(page, '#outcome');
  t.regex(refunded, /^Your payment of \$45\.00 for Returned scarf was refunded in full/);
  t.regex(refunded, /reaches your account within 5 to 10 working days/);
  t.true(refunded.endsWith(`Why: ${why}.`), refunded);
  t.false(await reloads(page));
});

test('the product page sold out, before its opening with the countdown, and a Buy over the limit refused in words with the header kept', async (t) => {
  const gone = await suite.sys.createProduct({ name: 'Gone tee', stock: 1 });
  const opensAt = new Date(Date.now() + 10 * 60_000).toISOString();
  const later = await suite.sys.createProduct({ name: 'Later tee', opensAt });
  const capped = await suite.sys.createProduct({ name: 'One-each tee', maxPerBuyer: 1 });
  await Promise.all([sellTo(suite.sys, gone, 'ns-first'), sellTo(suite.sys, capped, 'ns-eve')]);
  const page = await noScript(t, 'ns-eve');

  await page.goto(at(`/p/${gone}`));
  t.is(await page.locator('#offer').getAttribute('data-state'), 'sold_out');
  t.is(await words(page, '#offer'), 'Sold out. Every one has been sold.');
  t.is(await page.locator('main button').count(), 0, 'nothing to press');
  t.false(await reloads(page));

  await page.goto(at(`/p/${later}`));
  t.is(await page.locator('#offer').getAttribute('data-state'), 'not_open');
  t.regex(await words(page, '#offer'), /^Opens in (9 min \d+ s|10 min) \(.*\d\d:\d\d UTC\)\.$/);
  t.is(await page.locator('#countdown').getAttribute('datetime'), opensAt);
  t.is(await page.locator('#buy').count(), 0, 'no Buy before the opening');
  t.is(await reloadOf(page), '60', 'it looks again every minute until the opening');

  await page.goto(at(`/p/${capped}`));
  const [answer] = await Promise.all([
    page.waitForResponse((r) => r.url().endsWith(`/p/${capped}/buy`)),
    page.waitForURL((u) => u.pathname === `/p/${capped}/buy`),
    page.locator('#buy').click(),
  ]);
  t.is(answer.status(), 422);
  t.is(await page.locator('h1').textContent(), 'That is more than you may buy');
  t.regex(
    await words(page, '#notice'),
    /^Each buyer may buy at most 1 of this product, counting what you have already/,
  );
  t.is(await page.locator('#buyer').textContent(), 'ns-eve', 'the header keeps who is signed in');
  await press(page, 'a:text-is("Back to the product")', (u) => u.pathname === `/p/${capped}`);
});

test('the queue: waiting with its place and a <noscript> reload, let in by that reload with a Buy that goes on to Stripe’s page, and sold out for the buyer behind', async (t) => {
  const sku = await suite.sys.createProduct({
    name: 'Quiet drop',
    stock: 2,
    waitingRoom: { admitPerSecond: 2, maxActive: 1, sessionSeconds: 60 },
  });
  // A buyer let in first fills the room: the others wait.
  const inside = await suite.pollUntil(await suite.ticketOf(sku, 'ns-inside'), (b) => b.state === 'admitted');
  const page = await noScript(t, 'ns-next');
  await page.goto(at(`/p/${sku}`));
  await Promise.all([
    page.waitForURL((u) => u.pathname.startsWith('/queue/')),
    page.getByRole('button', { name: 'Join the queue' }).click(),
  ]);
  await page.waitForSelector('#queue[data-state="waiting"] #full');
  t.is(await titleOf(page), '0 ahead · Queue · Quiet drop');
  t.regex(await words(page, '#queue'), /^Buyers ahead of you: 0\. The shop is full: .*Estimated wait: about \d+/);
  t.regex(await words(page, '#come-back'), /need not keep this page open/);
  t.regex((await reloadOf(page)) ?? '', /^\d+$/, 'the <noscript> reload');

  const behindTicket = await suite.ticketOf(sku, 'ns-behind');
  const behind = await noScript(t, 'ns-behind');
  await behind.goto(at(`/queue/${encodeURIComponent(behindTicket)}`));
  await behind.locator('#position').filter({ hasText: /^1$/ }).waitFor();

  // The buyer inside buys one and pays: the next is let in.
  const first = await suite.buyWith(sku, 'ns-inside', inside.admissionToken);
  t.is(first.status, 201, JSON.stringify(first.body));
  t.is((await suite.sys.pay(await sessionOf(suite.sys.db, first.body.purchaseId), 'succeeded')).status, 200);

  await page.waitForSelector('#queue[data-state="admitted"]', { timeout: 60_000 });
  t.is(await page.locator('h1').textContent(), 'It is your turn: Quiet drop');
  t.regex(
    await words(page, '#queue'),
    /^You may buy now\. Your turn ends in \d+ (min|s).*\((?:\w{3} \d{1,2} \w{3}, )?\d\d:\d\d UTC\): buy before then\.$/,
  );
  t.truthy(await page.locator('input[name="admissionToken"]').getAttribute('value'));
  t.false(await reloads(page), 'a turn stays put');
  await press(page, '#buy', onCheckout);
  await press(page, '#pay', onPurchase);
  await page.waitForSelector('#outcome[data-status="confirmed"]');

  // The last unit sold: the buyer behind reads it when their page reloads itself.
  await behind.waitForSelector('#queue[data-state="sold_out"]', { timeout: 60_000 });
  t.is(await behind.locator('h1').textContent(), 'Quiet drop is sold out');
  t.is(await words(behind, '#queue'), 'Sorry: everything was sold before your turn came.');
  t.is(await behind.locator('main button').count(), 0, 'nothing to press');
  t.false(await reloads(behind), 'a closed line stops looking');
});
