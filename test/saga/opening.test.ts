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

  await new Promise((r) => setTimeout(r, Math.max(0, opensAt.getTime() - Date.now()) + 100));
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
