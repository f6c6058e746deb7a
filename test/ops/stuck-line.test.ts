import { randomUUID } from 'node:crypto';
import test from 'ava';
import { findStuckSagas } from '../../ops/stuck-sagas';
import { asBuyer, startSystem, type System } from '../helpers/system';

// A purchase waiting its turn in the line for Checkout Sessions (the Stripe budget paces them) is
// holding, but not stuck: given the database, `sagas stuck` counts its time from its slot in the
// line, not from its start, so a long line at a drop does not bury the sagas that are stuck.

let sys: System;
test.before(async () => {
  sys = await startSystem({ checkoutsPerSecond: 1, ownDatabase: true });
});
test.after.always(async () => {
  await sys?.close();
});

test('purchases waiting in the checkout line are not reported stuck holding when the finder has the database', async (t) => {
  const sku = await sys.createProduct({ stock: 20 });
  // Twenty at once at a budget of one session a second: their slots are a second apart, twenty seconds in all.
  const answers = await Promise.all(
    Array.from({ length: 20 }, async (_, i) =>
      sys.api(
        'POST',
        '/v1/purchases',
        { sku },
        { 'idempotency-key': randomUUID(), prefer: 'respond-async', ...(await asBuyer(`line-${i}`)) },
      ),
    ),
  );
  for (const a of answers) t.is(a.status, 202, JSON.stringify(a.body));
  // Every saga started over half a second ago, while some slots are still to come.
  await new Promise((r) => setTimeout(r, 1000));
  const olderThanMs = 500;
  const found = await findStuckSagas(sys.temporal, { olderThanMs, sku, db: sys.db });
  const { rows } = await sys.db.query<{ purchase_id: string }>(
    `SELECT purchase_id FROM purchases WHERE sku = $1 AND status = 'holding' AND checkout_at > now()`,
    [sku],
  );
  t.true(rows.length >= 2, `purchases still waiting for their slot: ${rows.length}`);
  const stuck = new Set(found.filter((s) => s.kinds.includes('stuck_holding')).map((s) => s.purchaseId));
  for (const { purchase_id } of rows) t.false(stuck.has(purchase_id), `${purchase_id} is waiting in line, not stuck`);
  // Without the database the finder cannot see the line: it reports by start time, as it says.
  const blind = await findStuckSagas(sys.temporal, { olderThanMs, sku });
  t.true(blind.some((s) => s.kinds.includes('stuck_holding')));
});
