import { accessSync, constants } from 'node:fs';
import path from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';

/** Debian's `chromium` package; `npx playwright install` cannot download a browser here. */
export const DEFAULT_CHROMIUM_PATH = '/usr/bin/chromium';

/**
 * Starts headless Chromium from the system binary (`CHROMIUM_PATH`, else /usr/bin/chromium). The flags keep it
 * off the network except for the pages a test opens: no component updates, sync or QUIC probes that would
 * need internet, which sessions and CI do not have. `--no-sandbox` because tests may run as root.
 */
export async function launchBrowser(): Promise<Browser> {
  const executablePath = process.env.CHROMIUM_PATH ?? DEFAULT_CHROMIUM_PATH;
  try {
    accessSync(executablePath, constants.X_OK);
  } catch {
    throw new Error(
      `Chromium is not installed at ${executablePath}: install Debian's package (\`apt-get install chromium\`, ` +
        'as .ci/run does) or set CHROMIUM_PATH to a Chromium binary',
    );
  }
  try {
    return await chromium.launch({
      executablePath,
      headless: true,
      args: [
        '--no-sandbox',
        '--disable-gpu',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
        '--no-first-run',
        '--disable-quic',
      ],
    });
  } catch (err) {
    throw new Error(`Chromium at ${executablePath} did not start: ${(err as Error).message}`, { cause: err });
  }
}

const SCREENSHOTS_DIR = path.join(__dirname, '../../docs/screenshots');

/** With SCREENSHOTS=1, saves the page as docs/screenshots/<name>.png (docs/pages.md shows them). */
export async function shot(page: Page, name: string): Promise<void> {
  if (process.env.SCREENSHOTS === '1') await page.screenshot({ path: path.join(SCREENSHOTS_DIR, `${name}.png`) });
}

/** Signs in with the development sign-in form from a product page, and comes back to it. */
export async function signInAs(page: Page, name: string): Promise<void> {
  await page.getByRole('link', { name: 'Sign in to buy' }).click();
  await page.getByLabel('Your name').fill(name);
  await Promise.all([page.waitForURL((u) => u.pathname.startsWith('/p/')), page.locator('#sign-in').click()]);
}
