import test from 'ava';
import { assertInvariants } from '../helpers/db';
import { asBuyer, startSystem, type System } from '../helpers/system';

// A sale that opens later: before `opensAt` a purchase is refused 403 `not-open` and nothing is
// written (no row, no saga); from the opening it is bought like any other product.

let sys: System;
test.before(async () => {
  sys = await startSystem();
});
test.after.always(async () => sys?.close());

/**
 * Waits until every API instance's clock is past `opensAt`: its own reading of Postgres's time is off
 * by up to its error bound (a few ms; more when it measured on a loaded machine), so a fixed margin
 * past the opening could still be before it for an API.
 */
async function untilOpen(opensAt: Date): Promise<void> {
  const at = opensAt.getTime() + sys.clockErrorMs() + 50;
  await new Promise((r) => setTimeout(r, Math.max(0, at - Date.now())));
}

test('before opensAt a purchase is 403 not-open with the opening and Retry-After, and nothing is written; after it, a purchase', async (t) => {
  const opensAt = new Date(Date.now() + 4_000);
  const sku = await sys.createProduct({ stock: 2, opensAt: opensAt.toISOString() });
  const product = await sys.api('GET', `/v1/products/${sku}`);
  t.is(product.body.opensAt, opensAt.toISOString());

  const early = await sys.buy(sku, 'early-ed');
  t.is(early.status, 403, JSON.stringify(early.body));
  t.like(early.body, { type: 'not-open', opensAt: opensAt.toISOString() });
  const retryAfter = Number(early.headers.get('retry-after'));
  t.true(retryAfter >= 1 && retryAfter <= 5, `Retry-After ${retryAfter}`);
  const { rows } = await sys.db.query('SELECT count(*)::int AS n FROM purchases WHERE sku = $1', [sku]);
  t.is(rows[0].n, 0, 'no purchase row before the opening');
  const sagas = await sys.temporal.workflow.count(`Sku = "${sku}"`);
  t.is(sagas.count, 0, 'no saga before the opening');

  await untilOpen(opensAt);
  const res = await sys.api(
    'POST',
    '/v1/purchases',
    { sku },
    { 'idempotency-key': `opening-${sku}`, ...(await asBuyer('early-ed')) },
  );
  t.is(res.status, 201, JSON.stringify(res.body));
  t.is(res.body.status, 'awaiting_payment');
  await assertInvariants(t, sys.db, sku);
});

// One clock for the opening: Postgres's. Two more API processes whose hosts' clocks are ten minutes
// off, one ahead and one behind, still refuse before the opening as Postgres sees it and sell after
// it, because each measured its offset to Postgres (store/clock.ts).
const TEN_MINUTES = 10 * 60_000;

test('API hosts whose clocks are minutes off refuse before the opening and sell after it, as Postgres counts time', async (t) => {
  const [ahead, behind] = await Promise.all([
    sys.startAnotherApi({ hostClockSkewMs: TEN_MINUTES }),
    sys.startAnotherApi({ hostClockSkewMs: -TEN_MINUTES }),
  ]);
  const opensAt = new Date(Date.now() + 4_000);
  const sku = await sys.createProduct({ stock: 2, opensAt: opensAt.toISOString() });
  const buyAt = async (url: string, buyerId: string) =>
    sys.api(
      'POST',
      `${url}/v1/purchases`,
      { sku },
      { 'idempotency-key': `${buyerId}-${sku}`, ...(await asBuyer(buyerId)) },
    );

  for (const [url, buyerId] of [
    [ahead, 'skew-ahead-ann'],
    [behind, 'skew-behind-bob'],
  ]) {
    const early = await buyAt(url, buyerId);
    t.is(early.status, 403, `${buyerId}: ${JSON.stringify(early.body)}`);
    t.like(early.body, { type: 'not-open', opensAt: opensAt.toISOString() });
    const retryAfter = Number(early.headers.get('retry-after'));
    t.true(retryAfter >= 1 && retryAfter <= 5, `${buyerId}: Retry-After ${retryAfter}`);
  }

  await untilOpen(opensAt);
  for (const [url, buyerId] of [
    [ahead, 'skew-ahead-ann'],
    [behind, 'skew-behind-bob'],
  ]) {
    const res = await buyAt(url, buyerId);
    t.is(res.status, 201, `${buyerId}: ${JSON.stringify(res.body)}`);
  }
  await assertInvariants(t, sys.db, sku);
});

test('an API host whose clock is behind tells a sold-out buyer when the hold lapses by Postgres’s clock', async (t) => {
  const behind = await sys.startAnotherApi({ hostClockSkewMs: -TEN_MINUTES });
  const sku = await sys.createProduct({ stock: 1, holdSeconds: 30 });
  t.is((await sys.buy(sku, 'lapse-holder')).status, 201);
  const res = await sys.api(
    'POST',
    `${behind}/v1/purchases`,
    { sku },
    { 'idempotency-key': `lapse-${sku}`, ...(await asBuyer('lapse-latecomer')) },
  );
  t.is(res.status, 409, JSON.stringify(res.body));
  t.like(res.body, { type: 'sold-out', final: false });
  const retryAfter = Number(res.headers.get('retry-after'));
  // The hold lapses in 30 s by Postgres's clock; by the host's own it would be ten minutes more.
  t.true(retryAfter >= 1 && retryAfter <= 31, `Retry-After ${retryAfter}`);
  t.true(Math.abs(Date.parse(res.body.retryAt) - (Date.now() + 30_000)) < 5_000, res.body.retryAt);
});
