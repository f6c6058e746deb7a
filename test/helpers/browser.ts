import { accessSync, constants } from 'node:fs';
import { chromium, type Browser } from 'playwright-core';

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
