import test from 'ava';
import { assertInvariants } from '../helpers/db';
import { freePort, suiteServiceEnv } from '../helpers/entry-point';
import { startServiceProcess } from '../helpers/worker-process';
import { until } from '../helpers/poll';
import { AS_SUPPORT, startSystem } from '../helpers/system';
import { confirmedPurchase } from '../helpers/attention';

// The API's drain on SIGTERM as an operator reads it (api/main.ts): a line for each stage (503 on
// /readyz for SHUTDOWN_GRACE_MS, the listener closed, the requests answered, stopped), and the
// draining /readyz answers, which every balancer's probe asks for, not a warn line each.

test('on SIGTERM the API says each stage of its drain, and its draining /readyz answers are no warn lines', async (t) => {
  const port = await freePort();
  const api = await startServiceProcess(
    'api/main.ts',
    {
      ...suiteServiceEnv('drain'),
      PORT: String(port),
      SHUTDOWN_GRACE_MS: '6000',
      LOG_LEVEL: 'info',
    },
    (line) => /^listening on /.test(line.msg),
  );
  const readyz = async () => {
    const res = await fetch(`http://127.0.0.1:${port}/readyz`);
    return { status: res.status, body: (await res.json()) as { status: string } };
  };
  // One probe before the signal: the first fetch of a process loads its HTTP client, which on a
  // loaded machine could outlast the grace time, and the listener would be closed by then.
  await readyz();
  const exited = new Promise<number | null>((resolve) => api.child.once('exit', resolve));
  api.child.kill('SIGTERM');
  // The balancers' probes during the grace time: 503, draining.
  const draining = await until('a draining /readyz', async () => {
    const { status, body } = await readyz();
    return status === 503 && body.status === 'draining' ? body : undefined;
  });
  t.is(draining.status, 'draining');
  t.is(await exited, 0);

  const msgs = api.lines.map((l) => l.msg);
  const stage = (re: RegExp) => msgs.findIndex((m) => re.test(m));
  const stages = [
    stage(/^SIGTERM, draining: \/readyz answers 503 for 6000 ms \(SHUTDOWN_GRACE_MS\)/),
    stage(/^drain: closing the listener, \d+ connection\(s\) open$/),
    stage(/^drain: (every request answered|requests still in flight)/),
    stage(/^stopped: /),
  ];
  t.true(
    stages.every((i, k) => i >= 0 && (k === 0 || i > stages[k - 1])),
    `each stage, in order:\n${msgs.join('\n')}`,
  );
  t.deepEqual(
    api.lines.filter((l) => l.msg === 'request' && l.level === 'warn').map((l) => l.path),
    [],
    'no warn line for the draining /readyz',
  );
});

// A request waiting on a saga when the listener closes would outlast the drain's 5 s (a purchase waits
// up to PURCHASE_TIMEOUT_MS, 20 s) and lose its connection: it answers what it has at once instead.

test('a purchase waiting for its Checkout Session when the listener closes is answered 202 with its Location, and its checkout opens after', async (t) => {
  const sys = await startSystem();
  t.teardown(() => sys.close());
  const sku = await sys.createProduct({ stock: 1 });
  // The session takes 6 s to open: the purchase holds its unit and waits for it (PURCHASE_TIMEOUT_MS 20 s).
  const fault = await sys.emulatorCall('POST', '/_emulator/faults', {
    path: '/v1/checkout/sessions',
    method: 'POST',
    latencyMs: 6_000,
  });
  t.is(fault.status, 201, JSON.stringify(fault.body));
  const buying = sys.buy(sku, 'drain-dana');
  await until('the hold', async () => {
    const { rows } = await sys.db.query(`SELECT 1 FROM holds WHERE sku = $1 AND status = 'active'`, [sku]);
    return rows.length ? true : undefined;
  });
  sys.lifecycle.close();
  const res = await buying;
  // Before, it waited for the session and answered 201 with the checkout URL, 6 s into a 5 s drain.
  t.is(res.status, 202, JSON.stringify(res.body));
  t.is(res.headers.get('location'), `/v1/purchases/${res.body.purchaseId}`);
  t.is(res.body.status, 'holding');
  t.truthy(res.body.holdExpiresAt);
  const opened = await sys.waitForPurchase(res.body.purchaseId, (p) => p.status === 'awaiting_payment');
  t.truthy(opened.checkout_session_id);
  await assertInvariants(t, sys.db, sku);
});

test('a purchase whose hold is not taken when the listener closes is answered 503 at once, to retry with the same key elsewhere', async (t) => {
  // No worker: the hold step waits for one (PURCHASE_TIMEOUT_MS 20 s).
  const sys = await startSystem({ worker: false });
  t.teardown(() => sys.close());
  const sku = await sys.createProduct({ stock: 1 });
  const buying = sys.buy(sku, 'drain-dev');
  await until('the purchase on record', async () => {
    const { rows } = await sys.db.query(`SELECT 1 FROM purchases WHERE sku = $1`, [sku]);
    return rows.length ? true : undefined;
  });
  sys.lifecycle.close();
  const res = await buying;
  t.is(res.status, 503, JSON.stringify(res.body));
  t.is(res.body.type, 'unavailable');
  t.regex(res.body.detail, /shutting down/);
  t.truthy(res.headers.get('retry-after'));
  // The saga goes on: once a worker runs, it takes the hold and opens the checkout.
  await sys.startWorker();
  const { rows } = await sys.db.query(`SELECT purchase_id FROM purchases WHERE sku = $1`, [sku]);
  await sys.waitForPurchase(rows[0].purchase_id, (p) => p.status === 'awaiting_payment');
  await assertInvariants(t, sys.db, sku);
});

test('a support refund waiting for Stripe when the listener closes is answered 202 pending at once, and its saga refunds', async (t) => {
  const sys = await startSystem();
  t.teardown(() => sys.close());
  const { sku, purchaseId } = await confirmedPurchase(sys, 'drain-dora');
  // Stripe takes 6 s to answer the refund: the request waits for it (up to 10 s).
  const fault = await sys.emulatorCall('POST', '/_emulator/faults', {
    method: 'POST',
    path: '/v1/refunds',
    latencyMs: 6_000,
  });
  t.is(fault.status, 201, JSON.stringify(fault.body));
  const refunding = sys.api(
    'POST',
    `/v1/support/purchases/${purchaseId}/refund`,
    { reason: 'asked during a rollout', restock: false },
    AS_SUPPORT,
  );
  const saga = sys.temporal.workflow.getHandle(`refund-${purchaseId}`);
  await until('the refund saga', async () =>
    (await saga.describe().catch(() => undefined))?.status.name === 'RUNNING' ? true : undefined,
  );
  sys.lifecycle.close();
  const res = await refunding;
  // Before, it waited for Stripe's answer and said the refund had succeeded, 6 s into a 5 s drain.
  t.is(res.status, 202, JSON.stringify(res.body));
  t.deepEqual(res.body.refund, { status: 'pending', reason: 'asked during a rollout' });
  await sys.waitForPurchase(purchaseId, (p) => p.status === 'refunded' && p.refund_status === 'succeeded');
  await assertInvariants(t, sys.db, sku);
});
