import test, { type ExecutionContext } from 'ava';
import { tellStraySupportAction, tellSupportAction } from '../../client/refunds';
import { USAGE } from '../../ops/sagas-args';
import { findStuckSagas, stuckSagaFilters, type FindStuckOptions, type StuckSaga } from '../../ops/stuck-sagas';
import {
  allowRefunds,
  REFUSAL,
  refundFailedAfterSagaEnded,
  refusedLateRefund,
  refusedStrayRefund,
  runOpsCli,
} from '../helpers/attention';
import { asBuyer, startSystem, type System } from '../helpers/system';

// Each test has a system (emulator, API, worker, task queue) of its own: one stops its worker, one
// never starts it, one arms emulator faults; none of that may leak into the others.
async function system(t: ExecutionContext, opts: Parameters<typeof startSystem>[0] = {}): Promise<System> {
  const sys = await startSystem(opts);
  t.teardown(() => sys.close());
  return sys;
}

const DAY_MS = 24 * 3600_000;

/** Polls the finder until `pred` holds (visibility is eventually consistent), or fails with the last answer. */
async function stuckUntil(
  sys: System,
  sku: string,
  pred: (found: StuckSaga[]) => boolean,
  extra: Partial<FindStuckOptions> = {},
  timeoutMs = 20_000,
): Promise<StuckSaga[]> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const found = await findStuckSagas(sys.temporal, { olderThanMs: 0, sku, ...extra });
    if (pred(found)) return found;
    if (Date.now() > deadline) throw new Error(`stuck sagas of ${sku} never matched; last: ${JSON.stringify(found)}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

const sagasCli = (args: string[], env: Record<string, string> = {}) => runOpsCli('sagas', args, env);

test('a purchase whose hold lapsed with no worker to release it is reported stuck, with the lapsed hold as the reason', async (t) => {
  const sys = await system(t);
  // Long enough for the worker to stop before the lapse on a loaded machine (the tests run at once).
  const sku = await sys.createProduct({ holdSeconds: 10 });
  const res = await sys.buy(sku, 'stuck-alice');
  t.is(res.status, 201, JSON.stringify(res.body));
  const purchaseId = res.body.purchaseId as string;
  await sys.stopWorker();
  t.is(
    (await sys.waitForPurchase(purchaseId, () => true)).status,
    'awaiting_payment',
    'the worker stopped before the hold lapsed',
  );

  const found = await stuckUntil(sys, sku, (f) => f.some((s) => s.kinds.includes('hold_lapsed')));
  t.is(found.length, 1);
  t.like(found[0], {
    workflowId: `purchase-${purchaseId}`,
    workflowType: 'purchaseWorkflow',
    purchaseId,
    status: 'awaiting_payment',
    sku,
    buyerId: 'stuck-alice',
    taskQueue: sys.taskQueue,
  });
  t.is(Date.parse(found[0].holdExpiresAt!), Date.parse(res.body.holdExpiresAt));
  t.regex(found[0].reason, /hold lapsed at \S+ \(\d+s ago\) but the saga is still awaiting_payment/);
  t.is(found[0].pendingActivity, undefined);

  // Within the threshold it is not stuck yet.
  t.deepEqual(await findStuckSagas(sys.temporal, { olderThanMs: 60 * 60_000, sku }), []);

  // A worker comes back: the saga releases the hold and nothing is stuck any more.
  await sys.startWorker();
  await sys.waitForPurchase(purchaseId, (p) => p.status === 'expired');
  t.deepEqual(await stuckUntil(sys, sku, (f) => f.length === 0), []);
});

test('a purchase that never gets past taking its hold is reported stuck holding', async (t) => {
  const sys = await system(t, { worker: false, purchaseTimeoutMs: 500 });
  const sku = await sys.createProduct();
  const res = await sys.buy(sku, 'stuck-bob');
  t.is(res.status, 503, 'no worker: the hold is never taken');
  const { rows } = await sys.db.query<{ purchase_id: string }>('SELECT purchase_id FROM purchases WHERE sku = $1', [
    sku,
  ]);
  const purchaseId = rows[0].purchase_id;

  const found = await stuckUntil(sys, sku, (f) => f.some((s) => s.kinds.includes('stuck_holding')));
  t.is(found.length, 1);
  t.like(found[0], { purchaseId, status: 'holding', sku, buyerId: 'stuck-bob', holdExpiresAt: undefined });
  t.regex(found[0].reason, /still holding \d+s after it started/);

  // With the database, the finder sees that this record's saga is running and does not call it orphaned.
  const withDb = await findStuckSagas(sys.temporal, { olderThanMs: 0, sku, db: sys.db });
  t.is(withDb.length, 1);
  t.true(withDb[0].kinds.includes('stuck_holding'));
  t.false(withDb[0].kinds.includes('orphaned'));

  // A worker arrives: the saga takes its hold and opens checkout, and is no longer stuck.
  await sys.startWorker();
  await sys.waitForPurchase(purchaseId, (p) => p.status === 'awaiting_payment');
  t.deepEqual(await stuckUntil(sys, sku, (f) => f.length === 0), []);
  t.is(
    (await sys.api('POST', `/v1/purchases/${purchaseId}/cancel`, undefined, await asBuyer('stuck-bob'))).status,
    200,
  );
});

test('a purchase record left holding with no saga running is reported orphaned when the database is given', async (t) => {
  const sys = await system(t, { worker: false, purchaseTimeoutMs: 500 });
  const sku = await sys.createProduct();
  t.is((await sys.buy(sku, 'stuck-erin')).status, 503);
  const { rows } = await sys.db.query<{ purchase_id: string }>('SELECT purchase_id FROM purchases WHERE sku = $1', [
    sku,
  ]);
  const purchaseId = rows[0].purchase_id;
  // An operator terminates the saga: the record stays `holding` and nothing will ever settle it.
  await sys.temporal.workflow.getHandle(`purchase-${purchaseId}`).terminate('test: saga lost');

  const found = await findStuckSagas(sys.temporal, { olderThanMs: 0, sku, db: sys.db });
  t.is(found.length, 1);
  t.like(found[0], { purchaseId, status: 'holding', sku, buyerId: 'stuck-erin', kinds: ['orphaned'] });
  t.regex(
    found[0].reason,
    new RegExp(`the record is holding \\(last changed \\d+s ago\\) but its saga purchase-${purchaseId} is terminated`),
  );
  t.deepEqual(
    await stuckUntil(sys, sku, (f) => f.length === 0),
    [],
    'without the database only running sagas are seen',
  );
});

test('a saga whose Stripe call keeps failing is reported with the activity, its attempts and its last failure', async (t) => {
  const sys = await system(t);
  // Long enough for the session to open inside the hold on a loaded machine (else the answer is 503).
  const sku = await sys.createProduct({ holdSeconds: 5 });
  // Expiring the session after the hold lapses is retried until it succeeds: make it keep failing.
  const fault = await sys.emulatorCall('POST', '/_emulator/faults', {
    path: '/v1/checkout/sessions/*/expire',
    status: 503,
    count: 1000,
  });
  t.is(fault.status, 201, JSON.stringify(fault.body));
  const res = await sys.buy(sku, 'stuck-carol');
  t.is(res.status, 201, JSON.stringify(res.body));
  const purchaseId = res.body.purchaseId as string;

  const found = await stuckUntil(sys, sku, (f) => f.some((s) => s.kinds.includes('activity_retrying')));
  t.is(found.length, 1);
  const saga = found[0];
  t.is(saga.purchaseId, purchaseId);
  t.like(saga.pendingActivity, { activityType: 'expireCheckout', maximumAttempts: 0 });
  t.true(saga.pendingActivity!.attempt >= 3, `attempt ${saga.pendingActivity!.attempt}`);
  t.regex(saga.pendingActivity!.lastFailure ?? '', /Stripe/);
  t.regex(saga.reason, /activity expireCheckout failing: attempt \d+, last failure: .*Stripe/);

  // Stripe recovers: the saga expires the session and ends.
  await sys.emulatorCall('DELETE', '/_emulator/faults');
  await sys.waitForPurchase(purchaseId, (p) => p.status === 'expired', 60_000);
  t.deepEqual(await stuckUntil(sys, sku, (f) => f.length === 0), []);
});

test('the Temporal UI filters name the search attributes and the server accepts them', async (t) => {
  const sys = await system(t, { worker: false });
  t.is(
    stuckSagaFilters('2026-01-02T03:04:05.000Z').holdLapsed,
    'ExecutionStatus="Running" AND WorkflowType="purchaseWorkflow" AND PurchaseStatus IN ("holding","awaiting_payment") AND HoldExpiresAt < "2026-01-02T03:04:05.000Z"',
  );
  const filters = stuckSagaFilters(new Date('2026-01-02T03:04:05.000Z'), { sku: 'abc', taskQueue: sys.taskQueue });
  t.is(
    filters.stuckHolding,
    `ExecutionStatus="Running" AND WorkflowType="purchaseWorkflow" AND PurchaseStatus="holding" AND StartTime < "2026-01-02T03:04:05.000Z" AND Sku="abc" AND TaskQueue="${sys.taskQueue}"`,
  );
  for (const query of Object.values(filters)) t.is((await sys.temporal.workflow.count(query)).count, 0, query);
  t.throws(() => stuckSagaFilters(new Date(), { sku: 'x" OR Sku!="' }), { message: /cannot use/ });
});

test('the sagas CLI says so when nothing is stuck and prints the UI filters; a SKU that names no product is exit 2', async (t) => {
  const sys = await system(t, { worker: false });
  const sku = await sys.createProduct();
  // A misspelt SKU would read as nothing stuck: with the database it is refused, naming it.
  const typo = await sagasCli(['stuck', '--sku', `${sku}-typo`, '--fail-on-any']);
  t.is(typo.code, 2, typo.stdout);
  t.true(typo.stderr.includes(`unknown SKU "${sku}-typo"`), typo.stderr);
  const out = await sagasCli(['stuck', '--older-than', '0', '--sku', sku]);
  t.is(out.code, 0, out.stderr);
  t.regex(out.stdout, /^no stuck sagas/);
  t.true(out.stdout.includes(`PurchaseStatus IN ("holding","awaiting_payment") AND HoldExpiresAt < "`));
  t.true(out.stdout.includes(`Sku="${sku}"`));

  const json = await sagasCli(['stuck', '--json', '--sku', sku]);
  t.is(json.code, 0, json.stderr);
  t.like(JSON.parse(json.stdout), { olderThanMs: 5 * 60_000, stuck: [] });

  // For an alert: nothing stuck is exit 0 with --fail-on-any too; each filter has its UI link.
  const alert = await sagasCli(['stuck', '--older-than', '0', '--sku', sku, '--fail-on-any'], {
    TEMPORAL_UI_URL: 'http://ui.test:8080/',
  });
  t.is(alert.code, 0, alert.stderr);
  t.true(
    alert.stdout.includes(
      `http://ui.test:8080/namespaces/default/workflows?query=${encodeURIComponent('ExecutionStatus="Running"')}`,
    ),
    alert.stdout,
  );
});

test('the sagas CLI cannot reach Temporal: exit 2, so an alert on exit 1 does not mistake it for a finding', async (t) => {
  const out = await sagasCli(['stuck', '--fail-on-any'], {
    TEMPORAL_ADDRESS: '127.0.0.1:1',
    DATABASE_URL: '',
    // It would try the refused connection again for 10 s by default.
    TEMPORAL_CONNECT_TIMEOUT_MS: '500',
  });
  t.is(out.code, 2, out.stderr);
  t.regex(out.stderr, /cannot reach Temporal at 127\.0\.0\.1:1/);
});

test('the sagas CLI lists a stuck saga with its reason', async (t) => {
  const sys = await system(t, { worker: false, purchaseTimeoutMs: 500 });
  const sku = await sys.createProduct();
  t.is((await sys.buy(sku, 'stuck-dan')).status, 503);
  await stuckUntil(sys, sku, (f) => f.length === 1);
  const out = await sagasCli(['stuck', '--older-than', '0s', '--sku', sku]);
  t.is(out.code, 0, out.stderr);
  t.regex(out.stdout, /^1 stuck saga\(s\)/);
  t.regex(out.stdout, new RegExp(`purchase-\\S+\\s+holding\\s+${sku}\\s+stuck-dan\\s+-\\s+still holding`));
  // Beside the row, the saga's page in the Temporal UI (the dev server's by default).
  const [found] = await findStuckSagas(sys.temporal, { olderThanMs: 0, sku });
  t.true(
    out.stdout.includes(
      `  http://127.0.0.1:8233/namespaces/default/workflows/${found.workflowId}/${found.runId}/history`,
    ),
    out.stdout,
  );

  // --fail-on-any turns a finding into exit 1, for a cron job or an alert.
  const alert = await sagasCli(['stuck', '--older-than', '0s', '--sku', sku, '--fail-on-any', '--json']);
  t.is(alert.code, 1, alert.stderr);
  const report = JSON.parse(alert.stdout);
  t.is(report.stuck.length, 1);
  t.is(
    report.stuck[0].url,
    `http://127.0.0.1:8233/namespaces/default/workflows/${found.workflowId}/${found.runId}/history`,
  );

  // Let the saga finish: the API's update call is still waiting on it (and would hold this process open).
  await sys.startWorker();
  const { rows } = await sys.db.query<{ purchase_id: string }>('SELECT purchase_id FROM purchases WHERE sku = $1', [
    sku,
  ]);
  await sys.waitForPurchase(rows[0].purchase_id, (p) => p.status === 'awaiting_payment');
  t.is(
    (await sys.api('POST', `/v1/purchases/${rows[0].purchase_id}/cancel`, undefined, await asBuyer('stuck-dan')))
      .status,
    200,
  );
});

// Every bad command line is a UsageError of the parser (test/fast/ops/sagas-args.test.ts): one run
// proves the CLI prints it with the usage and exits 2.
test('the sagas CLI refuses bad arguments with exit 2 and the usage', async (t) => {
  const out = await sagasCli(['stuck', '--older-than', 'soon']);
  t.is(out.code, 2, out.stderr);
  t.is(out.stderr, `sagas: --older-than: not a duration: soon (try 30s, 5m, 2h)\n\n${USAGE}\n`);
  t.is(out.stdout, '');
});

test("a purchase whose late refund Stripe refuses is listed as needing attention with Stripe's message, whatever its age", async (t) => {
  const sys = await system(t);
  const { sku, purchaseId } = await refusedLateRefund(sys, 'attn-alice');
  const workflowId = `purchase-${purchaseId}`;

  // From Temporal alone: the PurchaseStatus search attribute finds it, the saga itself says why.
  const found = await stuckUntil(sys, sku, (f) => f.some((s) => s.kinds.includes('needs_attention')), {
    olderThanMs: DAY_MS,
  });
  t.is(found.length, 1);
  t.like(found[0], { workflowId, purchaseId, status: 'needs_attention', sku, buyerId: 'attn-alice' });
  t.deepEqual(found[0].kinds, ['needs_attention']);
  t.true(found[0].reason.includes(REFUSAL), found[0].reason);
  t.regex(found[0].reason, /^needs attention: sold out: .*; purchase-\S+ waits for support/);

  // With the database the record is found too: still one finding, with the record's reason.
  const withDb = await findStuckSagas(sys.temporal, { olderThanMs: DAY_MS, sku, db: sys.db });
  t.is(withDb.length, 1, JSON.stringify(withDb));
  t.like(withDb[0], { workflowId, purchaseId, status: 'needs_attention' });
  t.deepEqual(withDb[0].kinds, ['needs_attention']);
  t.true(withDb[0].reason.includes(REFUSAL), withDb[0].reason);
  const { rows } = await sys.db.query('SELECT reason FROM purchases WHERE purchase_id = $1', [purchaseId]);
  t.true(withDb[0].reason.includes(rows[0].reason));

  // The Temporal UI filter finds exactly it.
  const filter = stuckSagaFilters(new Date(), { sku }).needsAttention;
  t.is(
    filter,
    `ExecutionStatus="Running" AND WorkflowType IN ("purchaseWorkflow","supportRefundWorkflow","refundAgainWorkflow") AND PurchaseStatus="needs_attention" AND Sku="${sku}"`,
  );
  t.is((await sys.temporal.workflow.count(filter)).count, 1);

  // The CLI, with its default 5-minute threshold: listed once, with Stripe's message and the way out.
  const out = await sagasCli(['stuck', '--sku', sku]);
  t.is(out.code, 0, out.stderr);
  t.regex(out.stdout, /^1 stuck saga\(s\)/);
  const lines = out.stdout.split('\n').filter((l) => l.startsWith(workflowId));
  t.is(lines.length, 1, out.stdout);
  t.regex(
    lines[0],
    new RegExp(`^${workflowId}\\s+needs_attention\\s+${sku}\\s+attn-alice\\s+\\S+\\s+needs attention: `),
  );
  t.true(lines[0].includes(REFUSAL), lines[0]);
  t.true(out.stdout.includes(`npm run support -- retry <purchaseId>`));
  t.true(out.stdout.includes(`needs attention (support): ${filter}`), out.stdout);
  const json = await sagasCli(['stuck', '--json', '--sku', sku]);
  t.is(json.code, 0, json.stderr);
  t.like(JSON.parse(json.stdout).stuck, [{ workflowId, kinds: ['needs_attention'] }]);

  // Stripe recovers and support says retry: refunded, and nothing is listed any more.
  await allowRefunds(sys);
  t.deepEqual(await tellSupportAction(sys.temporal, purchaseId, { action: 'retry', actor: 'test' }), [workflowId]);
  await sys.waitForPurchase(purchaseId, (r) => r.status === 'refunded');
  t.deepEqual(await stuckUntil(sys, sku, (f) => f.length === 0, { db: sys.db }), []);
});

test('a purchase whose refund failed after its saga ended is listed from its record, saying no saga will retry it', async (t) => {
  const sys = await system(t);
  const { sku, purchaseId } = await refundFailedAfterSagaEnded(sys, 'attn-bob');

  t.deepEqual(
    await findStuckSagas(sys.temporal, { olderThanMs: 0, sku }),
    [],
    'no saga runs: Temporal alone sees nothing',
  );
  const found = await findStuckSagas(sys.temporal, { olderThanMs: DAY_MS, sku, db: sys.db });
  t.is(found.length, 1);
  t.like(found[0], {
    workflowId: `purchase-${purchaseId}`,
    purchaseId,
    status: 'needs_attention',
    sku,
    buyerId: 'attn-bob',
  });
  t.deepEqual(found[0].kinds, ['needs_attention']);
  t.regex(found[0].reason, /^needs attention: the refund failed after its saga ended: expired_or_canceled_card/);
  t.regex(found[0].reason, /no saga of it is running/);
});

test("a stray payment whose refund Stripe refuses is listed with the session, the purchase it named and Stripe's message", async (t) => {
  const sys = await system(t);
  const { sku, purchaseId, sessionId } = await refusedStrayRefund(sys, 'attn-carol');
  const workflowId = `stray-${sessionId}`;

  const found = await stuckUntil(sys, sku, (f) => f.length > 0, { db: sys.db });
  t.is(found.length, 1, JSON.stringify(found));
  t.like(found[0], {
    workflowId,
    workflowType: 'strayPaymentWorkflow',
    purchaseId,
    sessionId,
    status: 'needs_attention',
    sku,
    taskQueue: sys.taskQueue,
  });
  t.deepEqual(found[0].kinds, ['stray_payment']);
  t.true(found[0].reason.includes(REFUSAL), found[0].reason);
  t.regex(
    found[0].reason,
    new RegExp(`^stray payment of 1 usd minor units on session ${sessionId} naming ${purchaseId} \\(`),
  );
  t.regex(found[0].reason, new RegExp(`${workflowId} waits for support`));

  const out = await sagasCli(['stuck', '--sku', sku]);
  t.is(out.code, 0, out.stderr);
  t.regex(out.stdout, new RegExp(`^${workflowId}\\s+needs_attention\\s+${sku}\\s+-\\s+-\\s+stray payment`, 'm'));

  await allowRefunds(sys);
  t.true(await tellStraySupportAction(sys.temporal, sessionId, { action: 'retry', actor: 'test' }));
  t.deepEqual(await stuckUntil(sys, sku, (f) => f.length === 0, { db: sys.db }), []);
  t.is(
    (await sys.api('POST', `/v1/purchases/${purchaseId}/cancel`, undefined, await asBuyer('attn-carol'))).status,
    200,
  );
});
