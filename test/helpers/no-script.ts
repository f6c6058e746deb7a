import type { Locator, Page } from 'playwright-core';

// What the Chromium walks of the buyer's pages with JavaScript off share (test/e2e/no-script-*.test.ts):
// a page's words as a reader hears them, its <noscript> reload, and pressing links and plain forms.
// A page still waiting for news reloads itself from <noscript>: the walks wait for what that reload
// brings, they never count on an instant.

/** The text of `what` (a selector, or a locator) as a reader hears it, its white space folded. */
export async function words(page: Page, what: string | Locator = 'main'): Promise<string> {
  const text = await (typeof what === 'string' ? page.locator(what) : what).textContent();
  return (text ?? '').replace(/\s+/g, ' ').trim();
}

/** The content of the page's <noscript> reload ("2"): the page must have one (it waits for it). */
export const reloadOf = (page: Page) => page.locator('meta[http-equiv="refresh"]').getAttribute('content');

/** A page whose state is final reloads nothing (only for pages that do not reload themselves). */
export const reloads = async (page: Page) => (await page.locator('meta[http-equiv="refresh"]').count()) > 0;

/**
 * The <noscript> reload of a waiting page, in seconds: a whole number neither so short that the page
 * reloads under its reader nor so long that news waits (2 s to a minute); null when it has none.
 */
export async function reloadSeconds(page: Page): Promise<number | null> {
  const content = await page.locator('meta[http-equiv="refresh"]').getAttribute('content');
  return content !== null && /^\d+$/.test(content) ? Number(content) : null;
}

/**
 * The title of a page, read from its document's <title>: on a page that reloads itself, `page.title()`
 * read while a reload is under way answers the browser's "Loading …" instead; the locator waits for
 * the document that has one.
 */
export async function titleOf(page: Page): Promise<string> {
  return ((await page.locator('head > title').textContent()) ?? '').trim();
}

/** Presses a link or button of a page that does not reload itself, and waits for the page it leads to. */
export async function press(page: Page, selector: string, to: (u: URL) => boolean): Promise<void> {
  await Promise.all([page.waitForURL(to), page.locator(selector).click()]);
}

/**
 * Follows the link `selector` of a page that reloads itself to where `to` says. A reload landing just
 * as the link is pressed may bring the same page back instead: its link is then pressed again (a
 * link, a GET: pressing it twice goes to the same page).
 */
export async function follow(page: Page, selector: string, to: (u: URL) => boolean): Promise<void> {
  for (let tries = 1; ; tries++) {
    const loaded = page.waitForEvent('load');
    await page.locator(selector).click();
    await loaded;
    if (to(new URL(page.url()))) return;
    if (tries === 3) throw new Error(`${selector} never left ${page.url()}`);
  }
}

export const onCheckout = (u: URL) => u.pathname.startsWith('/checkout/cs_');
export const onPurchase = (u: URL) => u.pathname.startsWith('/purchases/');
export const onQueue = (u: URL) => u.pathname.startsWith('/queue/');
export const purchaseIdOf = (page: Page) => new URL(page.url()).pathname.split('/').pop()!;
