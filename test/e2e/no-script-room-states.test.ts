import test, { type ExecutionContext } from 'ava';
import type { Page } from 'playwright-core';
import { ADMIN_TOKEN, asBuyer } from '../helpers/credentials';
import { onQueue, press, reloads, reloadSeconds, titleOf, words } from '../helpers/no-script';
import { axeClean, pageSuite, ROOM_PAGES_SYSTEM } from '../helpers/page-suite';
import { openNow } from '../helpers/room';

// The waiting room's states with JavaScript off, at a phone's size (issue 32; no-script-states.test.ts
// walks waiting, admitted and sold out): the pre-queue before the opening, a full room, a paused one,
// sold out for now, a turn spent on a purchase (and one whose purchase came to nothing), and a turn
// that passed. Each says its state in words; a waiting page reloads itself from <noscript> every few
// seconds (2 s to a minute) and the tests wait for what that reload brings; a page with nothing more
// to wait for leads somewhere (its purchase, the rest of the sale), never to a dead end.

const suite = pageSuite(test, ROOM_PAGES_SYSTEM);

const noScript = (t: ExecutionContext, buyer: string) => suite.page(t, { js: false, buyer, timeoutMs: 60_000 });
const at = (path: string) => `${suite.sys.apiUrl}${path}`;
const ADMIN = { authorization: `Bearer ${ADMIN_TOKEN}` };

/** Presses "Join the queue" on the product page: the queue page it lands on, and the ticket. */
async function join(page: Page): Promise<string> {
  await Promise.all([page.waitForURL(onQueue), page.getByRole('button', { name: 'Join the queue' }).click()]);
  return decodeURIComponent(new URL(page.url()).pathname.split('/').pop()!);
}

/** A waiting page's <noscript> reload is there and sane: every 2 s to a minute. */
async function reloadsSanely(t: ExecutionContext, page: Page, state: string): Promise<void> {
  const seconds = await reloadSeconds(page);
  t.true(seconds !== null && seconds >= 2 && seconds <= 60, `${state} reloads itself every ${seconds} s`);
}

/** Loads `path` again (a page that does not reload itself) until `selector` is on it. */
async function loadUntil(page: Page, path: string, selector: string, timeoutMs = 60_000): Promise<void> {
  for (const deadline = Date.now() + timeoutMs; ;) {
    await page.goto(at(path));
    if ((await page.locator(selector).count()) > 0) return;
    if (Date.now() > deadline) throw new Error(`${path} never showed ${selector}`);
    await new Promise((r) => setTimeout(r, 500));
  }
}

test('before the opening: Join from the product page, the pre-queue in words reloading itself, and at the opening the turn with its Buy form', async (t) => {
  // Far ahead, then opened by the test: whether the buyer joined before the opening never depends on speed.
  const opensAt = new Date(Date.now() + 10 * 60_000).toISOString();
  const sku = await suite.sys.createProduct({
    name: 'Dawn drop',
    stock: 2,
    opensAt,
    waitingRoom: { admitPerSecond: 5, maxActive: 5, sessionSeconds: 120 },
  });
  const page = await noScript(t, 'nr-ann');
  await page.goto(at(`/p/${sku}`));
  t.is(await page.locator('#offer').getAttribute('data-state'), 'prequeue');
  t.is(await page.locator('#buy').count(), 0, 'no Buy before the opening');
  await join(page);
  t.is(await page.locator('#queue').getAttribute('data-state'), 'prequeue');
  t.is(await page.locator('h1').textContent(), 'You are in the queue for Dawn drop');
  const pre = await words(page, '#queue');
  t.regex(pre, /^The sale has not opened yet: it opens in \d+ min.*\((?:\w{3} \d{1,2} \w{3}, )?\d\d:\d\d UTC\)\./);
  t.regex(pre, /Places are drawn at random at the opening: everyone who joined before then has the same chance\.$/);
  t.regex(await words(page, '#come-back'), /need not keep this page open: your place is kept/);
  t.is(await page.locator('#queue time').getAttribute('datetime'), opensAt);
  await reloadsSanely(t, page, 'the pre-queue');

  await openNow(suite.sys.databaseUrl, sku);
  await page.waitForSelector('#queue[data-state="admitted"]');
  t.is(await page.locator('h1').textContent(), 'It is your turn: Dawn drop');
  t.false(await reloads(page), 'a turn stays put');
  // Its Buy is a plain form carrying the admission. (Not pressed: this process read the product's
  // opening before the test moved it to now; no-script-states.test.ts presses a turn's Buy.)
  t.is(await page.locator('form:has(#buy)').getAttribute('action'), `/p/${sku}/buy`);
  t.truthy(await page.locator('input[name="admissionToken"]').getAttribute('value'));
});

test('a full room, then paused, each in words with the page reloading itself, and the turn once the buyer inside leaves', async (t) => {
  const sku = await suite.sys.createProduct({
    name: 'Crowded cap',
    stock: 3,
    waitingRoom: { admitPerSecond: 2, maxActive: 1, sessionSeconds: 120 },
  });
  const inside = await suite.pollUntil(await suite.ticketOf(sku, 'nr-inside'), (b) => b.state === 'admitted');
  const page = await noScript(t, 'nr-ben');
  await page.goto(at(`/p/${sku}`));
  await join(page);
  await page.waitForSelector('#queue[data-state="waiting"] #full');
  t.is(await titleOf(page), '0 ahead · Queue · Crowded cap');
  t.regex(
    await words(page, '#queue'),
    /^Buyers ahead of you: 0\. The shop is full: the buyers inside are paying, and the next in line is let in as each finishes\. Estimated wait: about \d+ (s|min).*; it grows while nobody is let in\.$/,
  );
  t.regex(await words(page, '#come-back'), /need not keep this page open/);
  t.regex(await words(page, '#updated'), /Updated/);
  await reloadsSanely(t, page, 'a full room');

  t.is((await suite.sys.api('PATCH', `/v1/products/${sku}/waiting-room`, { state: 'paused' }, ADMIN)).status, 200);
  await page.waitForSelector('#queue[data-state="waiting"] #paused');
  t.regex(
    await words(page, '#queue'),
    /The shop has paused letting buyers in for now\. Your place is kept, and the line moves again when it lets buyers in\. .*at least \d+ (s|min).*more for every minute it stays paused\.$/,
  );
  await reloadsSanely(t, page, 'a paused room');
  const withJs = await suite.page(t, { buyer: 'nr-ben' });
  await withJs.goto(page.url());
  await withJs.waitForSelector('#queue[data-state="waiting"] #paused');
  await axeClean(t, withJs, 'a paused room');
  await withJs.close();

  // Open again, and the buyer inside takes a unit and gives it back: they leave, and this buyer is let in.
  t.is((await suite.sys.api('PATCH', `/v1/products/${sku}/waiting-room`, { state: 'open' }, ADMIN)).status, 200);
  const held = await suite.buyWith(sku, 'nr-inside', inside.admissionToken);
  t.is(held.status, 201, JSON.stringify(held.body));
  const cancelled = await suite.sys.api(
    'POST',
    `/v1/purchases/${held.body.purchaseId}/cancel`,
    undefined,
    await asBuyer('nr-inside'),
  );
  t.is(cancelled.status, 200);
  await page.waitForSelector('#queue[data-state="admitted"]');
  t.regex(
    await words(page, '#queue'),
    /^You may buy now\. Your turn ends in \d+ (min|s).*\((?:\w{3} \d{1,2} \w{3}, )?\d\d:\d\d UTC\): buy before then\.$/,
  );
  t.is(await page.locator('#buy').count(), 1);
});

test('sold out for now: every unit held by buyers let in before, in words, reloading itself until one comes back and the turn with it', async (t) => {
  const sku = await suite.sys.createProduct({
    name: 'Last lamp',
    stock: 1,
    waitingRoom: { admitPerSecond: 2, maxActive: 5, sessionSeconds: 120 },
  });
  const holder = await suite.pollUntil(await suite.ticketOf(sku, 'nr-holder'), (b) => b.state === 'admitted');
  const held = await suite.buyWith(sku, 'nr-holder', holder.admissionToken);
  t.is(held.status, 201, JSON.stringify(held.body));

  // Every unit is held: the product page offers no Join, so this buyer joined just before, over the API.
  const ticket = await suite.ticketOf(sku, 'nr-cy');
  const page = await noScript(t, 'nr-cy');
  await page.goto(at(`/queue/${encodeURIComponent(ticket)}`));
  await page.waitForSelector('#queue[data-state="waiting"] #sold-out-for-now');
  const forNow = await words(page, '#queue');
  t.regex(forNow, /Sold out for now: every one is spoken for by buyers let in before you\./);
  t.regex(forNow, /One may come back if their buyers do not pay/);
  t.regex(forNow, /You are near enough the front to get one if it does: your place is kept\.$/);
  t.is(await page.locator('main button').count(), 0, 'nothing to press yet');
  await reloadsSanely(t, page, 'sold out for now');

  // The holder gives the unit back: the page's own reload brings the turn.
  const cancelled = await suite.sys.api(
    'POST',
    `/v1/purchases/${held.body.purchaseId}/cancel`,
    undefined,
    await asBuyer('nr-holder'),
  );
  t.is(cancelled.status, 200);
  await page.waitForSelector('#queue[data-state="admitted"]');
  t.is(await page.locator('#buy').count(), 1);
});

test('a turn spent on a purchase leads to it; once that purchase came to nothing, the turn reads as passed, with the rest of the sale a link away', async (t) => {
  const sku = await suite.sys.createProduct({
    name: 'Spent tee',
    stock: 2,
    waitingRoom: { admitPerSecond: 5, maxActive: 5, sessionSeconds: 120 },
  });
  const ticket = await suite.ticketOf(sku, 'nr-dee');
  const admitted = await suite.pollUntil(ticket, (b) => b.state === 'admitted');
  const bought = await suite.buyWith(sku, 'nr-dee', admitted.admissionToken);
  t.is(bought.status, 201, JSON.stringify(bought.body));
  const page = await noScript(t, 'nr-dee');
  const queuePath = `/queue/${encodeURIComponent(ticket)}`;
  // The page knows the purchase once it is recorded on the ticket.
  await loadUntil(page, queuePath, '#queue[data-state="bought"]');
  t.is(await page.locator('h1').textContent(), 'You have a purchase: Spent tee');
  t.is(await words(page, '#queue'), 'You used your turn to buy: see your purchase.');
  t.is(await page.locator('#buy').count(), 0, 'no Buy for a spent turn');
  t.false(await reloads(page));
  await press(page, '#purchase', (u) => u.pathname === `/purchases/${bought.body.purchaseId}`);
  t.is(await page.locator('#pay').textContent(), 'Go to the checkout', 'the purchase offers its checkout');

  const cancelled = await suite.sys.api(
    'POST',
    `/v1/purchases/${bought.body.purchaseId}/cancel`,
    undefined,
    await asBuyer('nr-dee'),
  );
  t.is(cancelled.status, 200);
  await suite.sys.waitForPurchase(bought.body.purchaseId, (r) => r.status === 'expired');
  await loadUntil(page, queuePath, '#queue[data-state="spent"]');
  t.is(await page.locator('h1').textContent(), 'Your turn has passed');
  t.regex(
    await words(page, '#queue'),
    /^Your purchase during your turn did not go through \(see your purchase\), and your turn is over\./,
  );
  t.is(await page.locator('main button').count(), 0, 'no second turn offered');
  t.false(await reloads(page));
  const withJs = await suite.page(t, { buyer: 'nr-dee' });
  await withJs.goto(page.url());
  await axeClean(t, withJs, 'a turn spent on a purchase that came to nothing');
  await press(page, '#elsewhere', (u) => u.pathname === '/');
  t.is(await page.locator(`a[href="/p/${sku}"]`).count(), 1, 'the sale, this product in it');
});

test('a turn that passed unused reads so, offers no second place, and leads on to the rest of the sale', async (t) => {
  const sku = await suite.sys.createProduct({
    name: 'Missed turn tee',
    stock: 2,
    waitingRoom: { admitPerSecond: 5, maxActive: 5, sessionSeconds: 1 },
  });
  const ticket = await suite.ticketOf(sku, 'nr-eve');
  await suite.pollUntil(ticket, (b) => b.state === 'expired');
  const page = await noScript(t, 'nr-eve');
  await page.goto(at(`/queue/${encodeURIComponent(ticket)}`));
  t.is(await page.locator('#queue').getAttribute('data-state'), 'expired');
  t.is(await page.title(), 'Turn passed · Missed turn tee');
  t.is(await page.locator('h1').textContent(), 'Your turn has passed');
  t.is(
    await words(page, '#queue'),
    'You were let in but did not buy in time, so your turn went to the next buyer. There is one turn per buyer: this line has no other place for you.',
  );
  t.is(await page.locator('main button').count(), 0, 'no second Join');
  t.false(await reloads(page), 'nothing more to wait for');
  await press(page, '#elsewhere', (u) => u.pathname === '/');
  t.is(await page.locator('h1').count(), 1);
});
