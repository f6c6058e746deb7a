import { randomUUID } from 'node:crypto';
import test from 'ava';
import { purchaseIdFor } from '../../store/purchases';
import { purchaseWorkflowId } from '../../vocabulary';
import { assertInvariants } from '../helpers/db';
import { until } from '../helpers/poll';
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

test('40 requests with one key at once while the hold step is slow: one wait on the saga, none answered 5xx', async (t) => {
  // The stock's rows are locked by another transaction, so the saga's hold step waits while all 40
  // requests wait for it. Temporal takes at most 10 updates in flight per workflow (more are refused,
  // RESOURCE_EXHAUSTED, and a 503 once the client's retries run out): the requests of one key share
  // one update per API process.
  const sku = await sys.createProduct({ stock: 1, holdSeconds: 600 });
  const blocker = await sys.db.connect();
  let locked = true;
  const unlock = async () => {
    if (!locked) return;
    locked = false;
    await blocker.query('ROLLBACK');
    blocker.release();
  };
  t.teardown(unlock);
  await blocker.query('BEGIN');
  await blocker.query('SELECT 1 FROM stock_buckets WHERE sku = $1 FOR UPDATE', [sku]);
  const blockerPid = (await blocker.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0].pid;
  const buyerId = `slow-hold-${sku}`;
  const key = randomUUID();
  const buyer = await asBuyer(buyerId);
  const answering = Promise.all(
    Array.from({ length: 40 }, () => sys.api('POST', '/v1/purchases', { sku }, { 'idempotency-key': key, ...buyer })),
  );
  await until('the hold step waiting for the stock', async () => {
    const { rows } = await sys.db.query('SELECT 1 FROM pg_stat_activity WHERE $1::int = ANY(pg_blocking_pids(pid))', [
      blockerPid,
    ]);
    return rows.length > 0 ? true : undefined;
  });
  // Time for the other 39 to reach the saga (the purchase timeout, 20 s, is far longer).
  await new Promise((r) => setTimeout(r, 2_000));
  await unlock();
  const answers = await answering;
  const statuses = answers.map((a) => a.status).sort();
  t.deepEqual(statuses, [...Array<number>(39).fill(200), 201], JSON.stringify(answers.map((a) => a.body.detail)));
  t.is(new Set(answers.map((a) => a.body.purchaseId)).size, 1);
  const history = await sys.temporal.workflow.getHandle(purchaseWorkflowId(purchaseIdFor(key, buyerId))).fetchHistory();
  const waits = (history.events ?? []).filter((e) => e.workflowExecutionUpdateAcceptedEventAttributes).length;
  t.true(waits < 10, `${waits} waits for the hold reached the saga`);
  await assertInvariants(t, sys.db, sku);
});
