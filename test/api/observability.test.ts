import test from 'ava';
import { createMetrics } from '../../api/metrics';
import { createLogger } from '../../config/log';
import { hostClock } from '../../store/clock';
import { Gate } from '../../store/gate';
import { testDb } from '../helpers/db';
import { asBuyer, sessionOf, startSystem } from '../helpers/system';
import { startWorkerProcess, type WorkerProcess } from '../helpers/worker-process';
import { until } from '../helpers/poll';
import { captured } from '../helpers/log-lines';

// What an operator sees of a purchase: the API's access log and the worker's lines for its saga
// under one request id, the worker's /healthz and /metrics (Temporal's SDK metrics among them), and
// the API's metrics, against the real stack with the real worker process (worker/main.ts).

async function stopWorker(w: WorkerProcess): Promise<void> {
  const exited = new Promise((r) => w.child.once('exit', r));
  w.child.kill('SIGTERM');
  await exited;
}

test.serial(
  "a purchase's request id is in the API access log and on the worker's lines for its saga; the worker answers /healthz and shows Temporal's metrics",
  async (t) => {
    const api = captured();
    const sys = await startSystem({ worker: false, logger: createLogger('api', { LOG_LEVEL: 'info' }, api.stream) });
    const worker = await startWorkerProcess(sys, { LOG_LEVEL: 'info' });
    try {
      t.like(await (await fetch(`${worker.url}/healthz`)).json(), { status: 'ok', worker: 'RUNNING' });

      const sku = await sys.createProduct();
      const requestId = 'req-obs-0001';
      const res = await sys.buy(sku, 'obs-buyer');
      t.is(res.status, 201);
      t.regex(res.headers.get('x-request-id') ?? '', /^[0-9a-f-]{36}$/, 'an id is made up when none is sent');

      const mine = await sys.api(
        'POST',
        '/v1/purchases',
        { sku },
        {
          'idempotency-key': `obs-${requestId}`,
          'x-request-id': requestId,
          ...(await asBuyer('obs-buyer-2')),
        },
      );
      t.is(mine.status, 201, JSON.stringify(mine.body));
      t.is(mine.headers.get('x-request-id'), requestId, 'the id sent is echoed');
      const purchaseId = mine.body.purchaseId as string;

      const access = api.lines.find((l) => l.msg === 'request' && l.requestId === requestId);
      t.like(access, { level: 'info', method: 'POST', path: '/v1/purchases', route: '/v1/purchases', status: 201 });
      t.is(typeof access?.durationMs, 'number');

      // The workflow's own line and its activities' lines carry the id.
      const sagaLines = await until('the saga lines of the request', () => {
        const of = worker.lines.filter((l) => l.requestId === requestId);
        // The status line follows the checkout's (an activity on the Stripe queue): wait for both.
        return of.some((l) => l.msg === 'purchase saga started') &&
          of.some((l) => l.msg === 'activity done' && l.activityType === 'openCheckout') &&
          of.some((l) => l.msg === 'purchase status changed' && l.to === 'awaiting_payment')
          ? of
          : undefined;
      });
      const started = sagaLines.find((l) => l.msg === 'purchase saga started')!;
      t.like(started, { level: 'info', service: 'worker', purchaseId, workflowId: `purchase-${purchaseId}` });
      t.true(
        sagaLines.some((l) => l.msg === 'activity done' && l.activityType === 'takeHold'),
        'the hold (local activity)',
      );

      await sys.pay(await sessionOf(sys.db, purchaseId), 'succeeded');
      await sys.waitForPurchase(purchaseId, (p) => p.status === 'confirmed');
      await until('the confirmation line', () =>
        worker.lines.find(
          (l) => l.requestId === requestId && l.msg === 'purchase status changed' && l.to === 'confirmed',
        ),
      );

      const metrics = await (await fetch(`${worker.url}/metrics`)).text();
      t.regex(metrics, /^process_cpu_user_seconds_total /m, 'Node process metrics under their standard names');
      t.regex(metrics, /^nodejs_eventloop_lag_seconds /m);
      t.regex(
        metrics,
        /^temporal_local_activity_execution_latency_(bucket|count|sum)\{.*activity_type="takeHold"/m,
        'SDK metrics: the hold, a local activity',
      );
      t.regex(
        metrics,
        new RegExp(
          `^temporal_activity_execution_latency_(bucket|count|sum)\\{.*activity_type="openCheckout".*task_queue="${sys.taskQueue}-stripe"`,
          'm',
        ),
        'SDK metrics: the session, an activity of the Stripe queue',
      );
      t.regex(
        metrics,
        /^flashsale_stripe_requests_total\{endpoint="checkout\.sessions\.create",outcome="ok"\} [1-9]/m,
        'every call to Stripe is counted by endpoint and outcome',
      );
      t.regex(
        metrics,
        /^temporal_activity_execution_latency_(bucket|count|sum)\{.*activity_type="convertHold"/m,
        'SDK metrics: the confirmation, an activity',
      );
      t.regex(metrics, /^temporal_workflow_task_execution_latency_(bucket|count)/m);
      t.regex(metrics, new RegExp(`^temporal_[a-z_]+\\{.*task_queue="${sys.taskQueue}"`, 'm'));
      t.regex(metrics, /^flashsale_sweeper_returned_holds_total /m);

      // Every line the worker wrote is JSON with a level and a message.
      t.true(
        worker.lines.every((l) => typeof l.level === 'string' && typeof l.msg === 'string' && l.service === 'worker'),
      );
    } finally {
      await stopWorker(worker);
      await sys.close();
    }
  },
);

test.serial(
  "a caller's X-Request-Id that is too long or has unsafe characters is replaced, never echoed",
  async (t) => {
    const sys = await startSystem({ worker: false });
    try {
      for (const bad of ['x'.repeat(129), 'a b', 'id"><script>', '../../etc/passwd']) {
        const res = await fetch(`${sys.apiUrl}/healthz`, { headers: { 'x-request-id': bad } });
        const echoed = res.headers.get('x-request-id') ?? '';
        t.regex(echoed, /^[0-9a-f-]{36}$/, `${bad} is replaced by a new id`);
      }
      const ok = await fetch(`${sys.apiUrl}/healthz`, { headers: { 'x-request-id': 'abc.DEF_123:4@lb-7' } });
      t.is(ok.headers.get('x-request-id'), 'abc.DEF_123:4@lb-7');
    } finally {
      await sys.close();
    }
  },
);

test.serial(
  "the API's /metrics has the HTTP duration histogram, the gate's per-SKU stock and the purchases by status",
  async (t) => {
    const sys = await startSystem();
    try {
      const sku = await sys.createProduct({ stock: 3 });
      t.is((await sys.buy(sku, 'metrics-buyer')).status, 201);
      await sys.api('GET', `/v1/purchases/00000000-0000-4000-8000-000000000000`, undefined, {});
      // The gate reads the SKU again once the hold step answered, which may come a moment after the
      // 201 reached us: scrape until its view has the hold.
      const remaining = new RegExp(`^flashsale_gate_remaining_units\\{sku="${sku}"\\} 2$`, 'm');
      const text = await until('the gate view with the hold in /metrics', async () => {
        const body = (await sys.api('GET', '/metrics')).body as string;
        return remaining.test(body) ? body : undefined;
      });
      t.regex(
        text,
        /^flashsale_http_request_duration_seconds_bucket\{.*method="POST".*route="\/v1\/purchases".*status="201"/m,
      );
      t.regex(
        text,
        /^flashsale_http_request_duration_seconds_count\{.*route="\/v1\/purchases\/:id"/m,
        'the route template, not the id',
      );
      t.notRegex(text, /route="\/v1\/purchases\/0000/);
      t.regex(text, remaining);
      t.regex(text, new RegExp(`^flashsale_gate_held_units\\{sku="${sku}"\\} 1$`, 'm'));
      t.regex(text, /^flashsale_purchases\{status="awaiting_payment"\} \d+$/m);
      t.regex(text, /^flashsale_purchases_counted_at_seconds \d/m);
      t.regex(text, /^process_resident_memory_bytes /m, 'standard process metric names');
      t.notRegex(text, /^flashsale_process_/m, 'no prefix on Node metrics');
    } finally {
      await sys.close();
    }
  },
);

test('scrapes share one count of purchases by status: the GROUP BY runs once per interval, not per scrape', async (t) => {
  const pool = testDb(2);
  const gate = new Gate(pool, process.env.DATABASE_URL!, { clock: hostClock });
  let groupBys = 0;
  // The pool, counting the status query (every other call passes through).
  const counting = new Proxy(pool, {
    get(target, prop, receiver) {
      if (prop !== 'query') return Reflect.get(target, prop, receiver);
      return (...args: unknown[]) => {
        if (typeof args[0] === 'string' && /GROUP BY status/i.test(args[0])) groupBys++;
        return (target.query as (...a: unknown[]) => unknown).apply(target, args);
      };
    },
  });
  try {
    // Long enough for ten scrapes on a loaded machine; the wait below is measured from the count itself.
    const maxAgeMs = 3_000;
    const metrics = createMetrics(counting, gate, { statusMaxAgeMs: maxAgeMs });
    for (let i = 0; i < 10; i++) t.regex(await metrics.registry.metrics(), /^flashsale_purchases_counted_at_seconds /m);
    t.is(groupBys, 1, 'ten scrapes in a row, one count');
    const first = /^flashsale_purchases_counted_at_seconds (\S+)/m.exec(await metrics.registry.metrics())![1];
    await new Promise((r) => setTimeout(r, Math.max(0, Number(first) * 1000 + maxAgeMs + 50 - Date.now())));
    // A scrape after the interval answers at once with the last counts and starts one new count.
    await Promise.all(Array.from({ length: 5 }, () => metrics.registry.metrics()));
    const countedAt = async () =>
      Number(/^flashsale_purchases_counted_at_seconds (\S+)/m.exec(await metrics.registry.metrics())![1]);
    // The new count lands in the background; until then scrapes keep answering with the last one.
    await until('the background count', async () => ((await countedAt()) > Number(first) ? true : undefined), 5_000);
    t.is(groupBys, 2, 'five scrapes at once after the interval, one new count');
  } finally {
    await gate.close();
    await pool.end();
  }
});

test.serial(
  'a purchase logs its request at info; the reads a crowd repeats (its purchase polled, the product, the pages) at debug',
  async (t) => {
    const api = captured();
    const sys = await startSystem({ worker: true, logger: createLogger('api', { LOG_LEVEL: 'debug' }, api.stream) });
    try {
      const sku = await sys.createProduct();
      const bought = await sys.buy(sku, 'quiet-poller');
      t.is(bought.status, 201);
      const id = bought.body.purchaseId as string;
      const asThem = await asBuyer('quiet-poller');
      for (const path of [`/v1/purchases/${id}`, `/v1/products/${sku}`, `/p/${sku}`]) {
        t.true((await sys.api('GET', path, undefined, asThem)).status < 500, path);
      }
      const requests = api.lines.filter((l) => l.msg === 'request');
      const levelOf = (method: string, route: string) =>
        requests.filter((l) => l.method === method && l.route === route).map((l) => l.level);
      t.deepEqual(levelOf('POST', '/v1/purchases'), ['info']);
      for (const route of ['/v1/purchases/:id', '/v1/products/:sku', '/p/:sku']) {
        t.deepEqual(levelOf('GET', route), ['debug'], route);
      }
    } finally {
      await sys.close();
    }
  },
);

test.serial(
  "a failed activity attempt is one worker line (the SDK's `Activity failed`, with the attempt and the request id), and no line carries a task token",
  async (t) => {
    const sys = await startSystem({ worker: false });
    const worker = await startWorkerProcess(sys, { LOG_LEVEL: 'info' });
    try {
      await sys.emulatorCall('POST', '/_emulator/faults', {
        path: '/v1/checkout/sessions',
        method: 'POST',
        status: 500,
        count: 1,
      });
      const sku = await sys.createProduct();
      const requestId = 'req-obs-fail-1';
      const res = await sys.api(
        'POST',
        '/v1/purchases',
        { sku },
        { 'idempotency-key': requestId, 'x-request-id': requestId, ...(await asBuyer('obs-fail-buyer')) },
      );
      t.is(res.status, 201, JSON.stringify(res.body));
      const mine = await until('the session step done after its failed attempt', () => {
        const of = worker.lines.filter((l) => l.requestId === requestId && l.activityType === 'openCheckout');
        return of.some((l) => l.msg === 'activity done') ? of : undefined;
      });
      const failures = mine.filter((l) => /activity failed/i.test(l.msg));
      t.is(failures.length, 1, JSON.stringify(mine));
      t.like(failures[0], { msg: 'Activity failed', level: 'warn', attempt: 1 });
      t.is(typeof failures[0].durationMs, 'number');
      t.deepEqual(
        worker.lines.filter((l) => 'taskToken' in l).map((l) => l.msg),
        [],
        'no line carries a task token',
      );
      // Started on the suite's prebuilt bundle, which has the workflow interceptors in it: not named twice.
      t.truthy(process.env.WORKFLOW_BUNDLE_PATH);
      t.deepEqual(
        worker.lines.filter((l) => /ignor/i.test(String(l.msg))).map((l) => l.msg),
        [],
        'no option the SDK ignores',
      );
    } finally {
      await stopWorker(worker);
      await sys.close();
    }
  },
);
