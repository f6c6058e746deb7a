import { randomUUID } from 'node:crypto';
import test, { type ExecutionContext } from 'ava';
import type { Page } from 'playwright-core';
import { shot, signInAs } from '../helpers/browser';
import { asBuyer } from '../helpers/credentials';
import { axeClean, pageSuite, ROOM_PAGES_SYSTEM } from '../helpers/page-suite';

// The waiting room's pages in Chromium against the whole system: Join the queue on the product
// page, the queue page counting down the buyers ahead as the room lets them in, the Buy form once
// admitted, Checkout, and "sold out" for whoever is still in line when the last unit is sold; and
// the pre-queue before the opening. With SCREENSHOTS=1 the queue pages are saved to docs/screenshots/.

const suite = pageSuite(test, ROOM_PAGES_SYSTEM);

/** A fresh browser (its own cookies) signed in as `name` on the product page of `sku`. */
async function buyerPage(t: ExecutionContext, sku: string, name: string): Promise<Page> {
  const page = await suite.page(t, { viewport: { width: 720, height: 480 } });
  await page.goto(`${suite.sys.apiUrl}/p/${sku}`);
  await signInAs(page, name);
  return page;
}

/** Presses "Join the queue" on the product page and lands on the queue page; returns the ticket. */
async function joinFromPage(page: Page): Promise<string> {
  await Promise.all([
    page.waitForURL((u) => u.pathname.startsWith('/queue/')),
    page.getByRole('button', { name: 'Join the queue' }).click(),
  ]);
  return decodeURIComponent(new URL(page.url()).pathname.split('/').pop()!);
}

/**
 * Waits until the queue page reads `state`, and `position` when given, loading it again every 3 s:
 * the page keeps itself up to date, but a line sold out for now (one unit, held by the buyer let in)
 * asks a buyer beyond its reach to poll every 60 s (nextPollSeconds), longer than the buyers ahead's
 * turns (test/e2e/honest-pages.test.ts proves the update in place).
 */
async function waitForQueue(page: Page, state: string, position?: number): Promise<void> {
  const shows = async (timeout: number) => {
    await page.waitForSelector(`#queue[data-state="${state}"]`, { timeout });
    if (position !== undefined) {
      await page
        .locator('#position')
        .filter({ hasText: new RegExp(`^${position}$`) })
        .waitFor({ timeout });
    }
  };
  for (const deadline = Date.now() + 60_000; ;) {
    try {
      return await shows(3_000);
    } catch (err) {
      if (Date.now() > deadline) throw err;
      await page.reload();
    }
  }
}

/** Polls a ticket over the JSON API until it is admitted; returns its admission token. */
async function admissionOf(ticket: string): Promise<string> {
  const admitted = await suite.pollUntil(ticket, (b) => b.state === 'admitted' && Boolean(b.admissionToken), 60_000);
  return admitted.admissionToken as string;
}

/** An admitted buyer ahead takes the unit, then gives it back: they leave the room and the next is let in. */
async function buyAndCancel(sku: string, buyer: string, ticket: string): Promise<void> {
  const bought = await suite.buyWith(sku, buyer, await admissionOf(ticket));
  if (bought.status !== 201) throw new Error(`${buyer} buying: ${bought.status} ${JSON.stringify(bought.body)}`);
  const cancelled = await suite.sys.api('POST', `/v1/purchases/${bought.body.purchaseId}/cancel`, undefined, {
    ...(await asBuyer(buyer)),
  });
  if (cancelled.status !== 200) throw new Error(`${buyer} cancelling: ${cancelled.status}`);
}

/** Loads `pathname` again (a page that does not refresh itself) until `selector` is on it. */
async function reloadUntil(page: Page, pathname: string, selector: string, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    await page.goto(`${suite.sys.apiUrl}${pathname}`);
    if ((await page.locator(selector).count()) > 0) return;
    if (Date.now() > deadline) throw new Error(`${pathname} never showed ${selector}`);
    await new Promise((r) => setTimeout(r, 500));
  }
}

/** Long enough for a loaded machine to reach each buyer ahead before their turn ends (the line moves only as they buy). */
const SESSION_SECONDS = 30;

test('a buyer joins the queue, watches the line move, buys when admitted, and the buyer behind reads "sold out"', async (t) => {
  const sku = await suite.sys.createProduct({
    name: 'Queue runner',
    stock: 1,
    waitingRoom: { admitPerSecond: 1, maxActive: 1, sessionSeconds: SESSION_SECONDS },
  });
  // Three buyers line up first over the JSON API; the first is let in at once, the others wait.
  const ahead = ['rq-ahead-1', 'rq-ahead-2', 'rq-ahead-3'];
  const aheadTickets: string[] = [];
  for (const b of ahead) aheadTickets.push(await suite.ticketOf(sku, b));
  await admissionOf(aheadTickets[0]);

  const page = await buyerPage(t, sku, 'rq-grace');
  t.is(await page.locator('#offer').getAttribute('data-state'), 'queue');
  t.is(await page.locator('#buy').count(), 0, 'no Buy before the turn');
  await axeClean(t, page, 'a product with a waiting room');
  const ticket = await joinFromPage(page);
  t.regex(await page.title(), /^\d+ ahead · Queue · Queue runner$/);
  await waitForQueue(page, 'waiting', 2);
  // The wait, or why there is none: with one unit, held by the buyer let in, the line is sold out for now.
  t.regex((await page.locator('#queue').textContent()) ?? '', /Estimated wait: about \d+ s|Sold out for now/);
  t.is(await page.locator('main[data-poll]').count(), 1, 'the queue page keeps itself up to date');
  t.is(await page.locator('meta[http-equiv="refresh"]').count(), 0, 'in place: no reload under JavaScript');
  await shot(page, 'queue-waiting');
  await axeClean(t, page, 'waiting in line');

  // Another buyer joins behind, in a browser of their own.
  const late = await buyerPage(t, sku, 'rq-late');
  await joinFromPage(late);
  await waitForQueue(late, 'waiting', 3);

  // The buyers ahead take their turn one by one and give the unit back: the page counts down.
  const seen: number[] = [2];
  for (const [i, b] of ahead.entries()) {
    await buyAndCancel(sku, b, aheadTickets[i]);
    if (i < ahead.length - 1) {
      await waitForQueue(page, 'waiting', 1 - i);
      seen.push(1 - i);
    }
  }
  t.deepEqual(seen, [2, 1, 0], 'the position fell as the buyers ahead were let in');

  await waitForQueue(page, 'admitted');
  t.is(await page.locator('h1').textContent(), 'It is your turn: Queue runner');
  t.is(await page.title(), 'Your turn: buy Queue runner');
  t.is(await page.locator('#offer').getAttribute('data-state'), 'buy');
  t.truthy(await page.locator('input[name="admissionToken"]').getAttribute('value'), 'the form carries the admission');
  t.is(await page.locator('meta[http-equiv="refresh"]').count(), 0, 'an admitted page stays put');
  await shot(page, 'queue-admitted');
  await axeClean(t, page, 'admitted: Buy');
  // Meanwhile the buyer behind is next, and still waiting: one buyer inside at a time.
  await waitForQueue(late, 'waiting', 0);

  await Promise.all([page.waitForURL((u) => u.pathname.startsWith('/checkout/cs_')), page.locator('#buy').click()]);
  const { rows } = await suite.sys.db.query('SELECT purchase_id FROM purchases WHERE checkout_session_id = $1', [
    new URL(page.url()).pathname.split('/').pop(),
  ]);
  const purchaseId = rows[0].purchase_id as string;
  await Promise.all([page.waitForURL((u) => u.pathname === `/purchases/${purchaseId}`), page.locator('#pay').click()]);
  await page.waitForSelector('#outcome[data-status="confirmed"]', { timeout: 60_000 });
  t.regex((await page.locator('#outcome').textContent()) ?? '', /confirmed/);
  await axeClean(t, page, 'confirmed after a turn');
  t.like((await suite.sys.purchase(purchaseId)).body, { status: 'confirmed', buyerId: 'rq-grace', sku });

  // Nothing can come back: the room closes, and the buyer still in line is told at the next refresh.
  await waitForQueue(late, 'sold_out');
  t.is(await late.locator('h1').textContent(), 'Queue runner is sold out');
  t.regex((await late.locator('#queue').textContent()) ?? '', /everything was sold before your turn came/);
  t.is(await late.locator('main[data-poll]').count(), 0, 'a sold-out page stops looking');
  t.is(await late.locator('main button').count(), 0, 'nothing to press');
  await shot(late, 'queue-sold-out');
  await axeClean(t, late, 'sold out in line');
  t.like((await suite.sys.api('GET', `/v1/products/${sku}`)).body, { soldOut: true, waitingRoom: { state: 'closed' } });
  const { rows: bought } = await suite.sys.db.query(
    "SELECT buyer_id FROM purchases WHERE sku = $1 AND status = 'confirmed'",
    [sku],
  );
  t.deepEqual(
    bought.map((r) => r.buyer_id),
    ['rq-grace'],
    'one unit, one buyer',
  );

  // The turn was spent (the session may well still last): the queue page points to the purchase, not Buy.
  await reloadUntil(page, `/queue/${encodeURIComponent(ticket)}`, '#queue[data-state="bought"]');
  t.is(await page.locator('#purchase').getAttribute('href'), `/purchases/${purchaseId}`);
  t.is(await page.locator('#buy').count(), 0, 'no Buy form for a spent turn');
  await axeClean(t, page, 'the turn spent');
});

test('before the opening a buyer joins the pre-queue from the product page, and is let in after it', async (t) => {
  // Room for axe on the product page and the pre-queue before the opening, on a shared machine.
  const opensAt = new Date(Date.now() + 30_000);
  const sku = await suite.sys.createProduct({
    name: 'Midnight drop',
    stock: 2,
    opensAt: opensAt.toISOString(),
    waitingRoom: { admitPerSecond: 5, maxActive: 5 },
  });
  const page = await buyerPage(t, sku, 'rq-early');
  t.is(await page.locator('#opens').getAttribute('data-state'), 'not_open');
  t.regex((await page.locator('#countdown').textContent()) ?? '', /\d+ s/);
  t.is(await page.locator('#offer').getAttribute('data-state'), 'prequeue');
  await axeClean(t, page, 'before the opening: the countdown and the pre-queue');
  await joinFromPage(page);
  t.true(Date.now() < opensAt.getTime(), 'joined before the opening (the machine was too slow otherwise)');
  await waitForQueue(page, 'prequeue');
  t.regex((await page.locator('#queue').textContent()) ?? '', /has not opened/);
  t.is(await page.locator('#queue time').getAttribute('datetime'), opensAt.toISOString());
  t.is(await page.locator('#buy').count(), 0);
  await shot(page, 'queue-prequeue');
  await axeClean(t, page, 'in the pre-queue');

  // Buying before the opening is refused even with a crafted form: no admission yet.
  const early = await suite.sys.api(
    'POST',
    '/v1/purchases',
    { sku },
    { 'idempotency-key': randomUUID(), ...(await asBuyer('rq-early')) },
  );
  t.is(early.status, 403);

  // At the opening the pre-queue is given places and the room lets the buyer in (the page refreshes itself).
  await waitForQueue(page, 'admitted');
  t.true(Date.now() >= opensAt.getTime(), 'not before the opening');
  t.is(await page.locator('#buy').count(), 1);
  await axeClean(t, page, 'let in after the opening');
});
