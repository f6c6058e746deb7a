import test from 'ava';
import { selectedValues, selectorsOf } from '../helpers/promql';
import { startSystem, temporalAddress } from '../helpers/system';
import { startWorkerProcess } from '../helpers/worker-process';
import { until } from '../helpers/poll';
import { freezableRelay } from '../helpers/relay';

// The worker's health as Temporal hangs: a frontend that stops answering (as under `kill -STOP`)
// leaves the worker RUNNING with its pollers counted; its /healthz must say so, its /livez not (a
// restart cures nothing), and the SDK's transport failures, which FlashSaleWorkerLostTemporal reads,
// must climb.

const health = async (url: string, path: string) => {
  const res = await fetch(`${url}${path}`);
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
};

/** The worker's /healthz body once it answers `status` (it asks Temporal at most every 2 s). */
const healthOnce = (url: string, status: number, what: string) =>
  until(
    what,
    async () => {
      const h = await health(url, '/healthz');
      return h.status === status ? h.body : undefined;
    },
    60_000,
    250,
  );

test("the worker's /healthz says 503 while Temporal does not answer, and 200 again once it does; /livez stays 200", async (t) => {
  const sys = await startSystem({ worker: false });
  const relay = await freezableRelay(temporalAddress());
  let worker: Awaited<ReturnType<typeof startWorkerProcess>> | undefined;
  try {
    worker = await startWorkerProcess(sys, { TEMPORAL_ADDRESS: relay.address });
    const w = worker;
    // Its task queue is not the default: its Stripe queue is in no dynamic config, and it says so.
    t.true(
      w.lines.some(
        (l) =>
          l.level === 'warn' && l.msg.startsWith(`TASK_QUEUE is "${sys.taskQueue}": name "${sys.taskQueue}-stripe"`),
      ),
    );
    t.deepEqual(await health(w.url, '/healthz'), {
      status: 200,
      body: { status: 'ok', worker: 'RUNNING', temporal: 'ok' },
    });
    // The SDK's schedule-to-start latency is per task queue, with no activity type (what the
    // dashboard's panel and the alerts group by).
    const sku = await sys.createProduct();
    t.is((await sys.buy(sku, 'health-buyer')).status, 201);
    const scrape = await (await fetch(`${w.url}/metrics`)).text();
    const series = scrape.split('\n').filter((l) => l.startsWith('temporal_activity_schedule_to_start_latency_count'));
    t.true(
      series.some((l) => l.includes(`task_queue="${sys.taskQueue}-stripe"`)),
      `the Stripe queue's session step is counted\n${series.join('\n')}`,
    );
    t.false(
      series.some((l) => l.includes('activity_type=')),
      series.join('\n'),
    );
    // And the workflow tasks' (FlashSaleWorkflowTaskScheduleToStartHigh), per task queue too.
    const tasks = scrape
      .split('\n')
      .filter((l) => l.startsWith('temporal_workflow_task_schedule_to_start_latency_count'));
    t.true(
      tasks.some((l) => l.includes(`task_queue="${sys.taskQueue}"`)),
      `the saga's workflow tasks are counted\n${tasks.join('\n')}`,
    );

    relay.freeze();
    const down = await healthOnce(w.url, 503, 'a /healthz that says Temporal is unreachable');
    t.deepEqual(down, { status: 'down', worker: 'RUNNING', temporal: 'unreachable' });
    t.deepEqual(await health(w.url, '/livez'), { status: 200, body: { status: 'ok', worker: 'RUNNING' } });

    // The alert's input: the worker's long polls fail at the transport while the server hangs.
    const transport = selectorsOf(
      'temporal_long_request_failure{status_code=~"TRANSPORT_ERROR|UNAVAILABLE|DEADLINE_EXCEEDED"}',
    )[0];
    await until(
      'a long-poll failure at the transport',
      async () => {
        const text = await (await fetch(`${w.url}/metrics`)).text();
        return selectedValues(text, transport).some((v) => v > 0) || undefined;
      },
      150_000,
      1_000,
    );
    t.pass('the SDK counts failed long polls');

    relay.thaw();
    const up = await healthOnce(w.url, 200, 'a /healthz that says Temporal answers again');
    t.deepEqual(up, { status: 'ok', worker: 'RUNNING', temporal: 'ok' });
  } finally {
    relay.thaw();
    if (worker && worker.child.exitCode === null) {
      const exited = new Promise((r) => worker!.child.once('exit', r));
      worker.child.kill('SIGTERM');
      await exited;
    }
    await relay.close();
    await sys.close();
  }
});
