import type { ExecutionContext, TestFn } from 'ava';
import type { Browser, Page } from 'playwright-core';
import { seriousViolations } from './axe';
import { launchBrowser } from './browser';
import { buyerToken } from './credentials';
import { roomBuyers } from './room';
import { startSystem, type System } from './system';

// What every Chromium test file of the buyer's pages sets up (test/e2e/): the whole system and a
// browser for the file, started in its `before` hook and closed after; a fresh browser context per
// page (its own cookies), signed in by the buyer's cookie when asked; axe-core on each state; and a
// room's buyers over the JSON API (test/helpers/room.ts).

/** The system of the files whose rooms must move at once: their own database, a fast admitter, the dev sign-in. */
export const ROOM_PAGES_SYSTEM = { roomTickMs: 50, roomRefreshMs: 100, ownDatabase: true, devSignIn: true } as const;

/** A phone's screen, as issue 32 walked the pages. */
export const PHONE = { width: 390, height: 844 };

export interface PageOptions {
  /** Default: a phone. */
  viewport?: { width: number; height: number };
  /** JavaScript on (default) or off. */
  js?: boolean;
  timezoneId?: string;
  /** Signed in as this buyer, by the same token the JSON API takes, set as the pages' cookie. */
  buyer?: string;
  /** Each wait's default (the machine is shared: pages that refresh themselves get room). */
  timeoutMs?: number;
}

/** Registers the file's system and browser on `test`'s hooks; read them from the answer inside tests. */
export function pageSuite(test: TestFn, systemOptions: Parameters<typeof startSystem>[0] = {}) {
  let sys: System | undefined;
  let browser: Browser | undefined;
  test.before(async () => {
    [sys, browser] = await Promise.all([startSystem(systemOptions), launchBrowser()]);
  });
  test.after.always(async () => {
    await browser?.close();
    await sys?.close();
  });
  const system = (): System => {
    if (!sys) throw new Error('the system starts in the before hook');
    return sys;
  };
  return {
    get sys(): System {
      return system();
    },
    get browser(): Browser {
      if (!browser) throw new Error('the browser starts in the before hook');
      return browser;
    },
    ...roomBuyers(system),

    /** A page in a browser context of its own, closed when the test ends. */
    async page(t: ExecutionContext, o: PageOptions = {}): Promise<Page> {
      const context = await this.browser.newContext({
        viewport: o.viewport ?? PHONE,
        javaScriptEnabled: o.js ?? true,
        ...(o.timezoneId ? { timezoneId: o.timezoneId } : {}),
      });
      t.teardown(() => context.close());
      if (o.buyer) {
        await context.addCookies([{ name: 'buyer_token', value: await buyerToken(o.buyer), url: system().apiUrl }]);
      }
      const page = await context.newPage();
      page.setDefaultTimeout(o.timeoutMs ?? 40_000);
      return page;
    },

    /** `buyer` in line for `sku` over the JSON API: the ticket. */
    async ticketOf(sku: string, buyer: string): Promise<string> {
      const res = await this.join(sku, buyer);
      if (res.status !== 201) throw new Error(`joining as ${buyer}: ${res.status} ${JSON.stringify(res.body)}`);
      return res.body.ticket as string;
    },
  };
}

/** axe-core finds no critical or serious violation on the page as it is now (JavaScript on). */
export async function axeClean(t: ExecutionContext, page: Page, state: string): Promise<void> {
  t.deepEqual(await seriousViolations(page), [], `axe on ${state}`);
}
