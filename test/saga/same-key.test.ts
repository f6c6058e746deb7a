import { randomUUID } from 'node:crypto';
import test from 'ava';
import { assertInvariants } from '../helpers/db';
import { asBuyer, startSystem, type System } from '../helpers/system';

// One Idempotency-Key sent many times at once is one purchase: every request answers it (the first
// 201, every replay 200), never `sold-out` because the gate counted the key's own first request.

let sys: System;
test.before(async () => {
  sys = await startSystem();
});
test.after.always(async () => {
  await sys?.close();
});

/** `n` requests of one buyer with one key, all at once; `base(i)`: the API instance request `i` goes to. */
async function sameKeyAtOnce(sku: string, n: number, base: (i: number) => string = () => '') {
  const key = randomUUID();
  const buyer = await asBuyer(`same-key-${sku}`);
  return Promise.all(
    Array.from({ length: n }, (_, i) =>
      sys.api('POST', `${base(i)}/v1/purchases`, { sku }, { 'idempotency-key': key, ...buyer }),
    ),
  );
}

async function countsOf(sku: string) {
  const { rows } = await sys.db.query(
    `SELECT (SELECT count(*)::int FROM purchases WHERE sku = $1) AS purchases,
            (SELECT count(*)::int FROM holds WHERE sku = $1) AS holds`,
    [sku],
  );
  return rows[0];
}

for (const stock of [1, 3]) {
  test(`20 requests with one key at once, ${stock} unit(s) on sale: one purchase, answered to all`, async (t) => {
    const sku = await sys.createProduct({ stock, holdSeconds: 600 });
    const answers = await sameKeyAtOnce(sku, 20);
    const statuses = answers.map((a) => a.status).sort();
    t.deepEqual(
      statuses,
      [...Array<number>(19).fill(200), 201],
      JSON.stringify(answers.map((a) => a.body.type ?? a.body.status)),
    );
    const ids = new Set(answers.map((a) => a.body.purchaseId));
    t.is(ids.size, 1, `purchase ids answered: ${[...ids].join(', ')}`);
    t.deepEqual(await countsOf(sku), { purchases: 1, holds: 1 });
    const { count } = await sys.temporal.workflow.count(`WorkflowType="purchaseWorkflow" AND Sku="${sku}"`);
    t.true(count <= 1, `${count} sagas`);
    await assertInvariants(t, sys.db, sku);
  });
}

test('20 requests with one key at once over two API instances: one purchase, answered to all', async (t) => {
  const other = await sys.startAnotherApi();
  const sku = await sys.createProduct({ stock: 1, holdSeconds: 600 });
  const answers = await sameKeyAtOnce(sku, 20, (i) => (i % 2 ? other : ''));
  t.true(
    answers.every((a) => a.status === 200 || a.status === 201),
    JSON.stringify(answers.filter((a) => a.status >= 300).map((a) => a.body.detail)),
  );
  t.is(new Set(answers.map((a) => a.body.purchaseId)).size, 1);
  t.deepEqual(await countsOf(sku), { purchases: 1, holds: 1 });
  await assertInvariants(t, sys.db, sku);
});

test('the same key at once with two bodies: one purchase, and the other body is told the key was used', async (t) => {
  const sku = await sys.createProduct({ stock: 5, maxPerBuyer: 2, holdSeconds: 600 });
  const key = randomUUID();
  const buyer = await asBuyer(`two-bodies-${sku}`);
  const answers = await Promise.all(
    Array.from({ length: 20 }, async (_, i) => {
      const quantity = 1 + (i % 2);
      const res = await sys.api('POST', '/v1/purchases', { sku, quantity }, { 'idempotency-key': key, ...buyer });
      return { quantity, ...res };
    }),
  );
  const made = answers.filter((a) => a.status === 201);
  t.is(made.length, 1, JSON.stringify(answers.map((a) => [a.status, a.body.type])));
  for (const a of answers) {
    if (a.quantity === made[0].quantity) {
      t.true(a.status === 200 || a.status === 201, JSON.stringify(a.body));
      t.is(a.body.purchaseId, made[0].body.purchaseId);
    } else {
      t.is(a.status, 400, JSON.stringify(a.body));
      t.like(a.body, { type: 'invalid-request', errors: [{ field: 'Idempotency-Key' }] });
    }
  }
  t.deepEqual(await countsOf(sku), { purchases: 1, holds: 1 });
});
