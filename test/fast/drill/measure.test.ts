import fs from 'node:fs';
import path from 'node:path';
import test from 'ava';
import { countHistory, emptyCount } from '../../../drill/actions';
import { defaultFaults, faultEffects, parseFaults, type FaultRecord } from '../../../drill/faults';
import { readOptions, UsageError } from '../../../drill/options';
import { stripeFigures } from '../../../drill/stripe-usage';

// The pieces of the cluster rehearsal that are plain arithmetic: the fault schedule, the effect of a
// fault against the baseline, the Temporal actions counted from a history, Stripe's figures. (The
// balancer and the buyers spread over several APIs: test/drill/measure.test.ts.)

const history = (name: string) =>
  JSON.parse(fs.readFileSync(path.join(__dirname, '../../replay/histories/1.0.0', `${name}.json`), 'utf8')).events;

test('faults are read as kind@seconds, a Stripe window with its length, and sorted by time', (t) => {
  t.deepEqual(parseFaults('api@8,stripe@2:4,worker@5'), [
    { kind: 'stripe', at: 2, seconds: 4 },
    { kind: 'worker', at: 5 },
    { kind: 'api', at: 8 },
  ]);
  t.deepEqual(parseFaults('none'), []);
  t.throws(() => parseFaults('disk@3'), { message: /kind@seconds/ });
  t.throws(() => parseFaults('api@3:2'), { message: /only a stripe fault has a duration/ });
  t.deepEqual(
    defaultFaults(10).map((f) => `${f.kind}@${f.at}`),
    ['stripe@4', 'api@8', 'worker@12', 'temporal@16'],
  );
});

test('--cluster brings all four faults by default; a process fault needs the cluster and one process left', (t) => {
  const opts = readOptions(['--cluster'], {});
  t.true(opts !== 'help' && opts.faults.length === 4 && opts.cluster?.apis === 2 && opts.baseline);
  const plain = readOptions([], {});
  t.true(plain !== 'help' && plain.faults.length === 0);
  t.throws(() => readOptions(['--faults', 'worker@3'], {}), { instanceOf: UsageError, message: /need --cluster/ });
  t.throws(() => readOptions(['--cluster', '--apis', '1', '--faults', 'api@3'], {}), {
    instanceOf: UsageError,
    message: /would leave none of the 1 APIs/,
  });
  t.throws(() => readOptions(['--workers', '3'], {}), { instanceOf: UsageError, message: /go with --cluster/ });
  const stripeOnly = readOptions(['--faults', 'stripe@1:2', '--stripe-rate', '10'], {});
  t.true(stripeOnly !== 'help' && stripeOnly.stripeRate === 10 && stripeOnly.faults[0].kind === 'stripe');
});

test("a fault's delay is how much further the checkouts fell behind the run without faults while it lasted", (t) => {
  const fault = (kind: 'api' | 'worker', at: number): FaultRecord => ({
    kind,
    at,
    target: `${kind}-1`,
    startedAt: at * 1000,
    endedAt: at * 1000 + 100,
    detail: '',
  });
  // Baseline: a checkout a second. Faulted: the same until 3 s, then 2 s late from the 4th on, then 5 s late from the 7th.
  const baseline = [1, 2, 3, 4, 5, 6, 7, 8].map((s) => s * 1000);
  const faulted = [1, 2, 3, 6, 7, 8, 12, 13].map((s) => s * 1000);
  const errors = [3100, 3600, 4200, 9100, 9200, 9300, 9400, 9500];
  const effects = faultEffects([fault('api', 3.5), fault('worker', 9)], faulted, errors, baseline);
  t.deepEqual(effects, [
    { delaySeconds: 2, errors: 2 },
    { delaySeconds: 3, errors: 5 },
  ]);
  t.deepEqual(
    faultEffects([fault('api', 3.5)], faulted, errors).map((e) => e.delaySeconds),
    [null],
  );
});

test('the actions of a recorded purchase history, by the Temporal Cloud rules', (t) => {
  const events = history('buyer-cancel');
  const t0 = Date.parse(events[0].eventTime);
  const count = emptyCount();
  countHistory('purchase-x', events, t0, count);
  t.like(count.byType, {
    start: 1,
    update: 2,
    'local activities': 1, // the hold, a marker of the first workflow task
    activity: 4, // the session (on the Stripe queue), the expire, the release and the record
    timer: 1,
    signal: 1,
    'search attribute upsert': 2,
    'activity retry': 0,
  });
  t.is(count.total, 12);
  t.is(count.workflows, 1);
});

test('a signal-with-start counts once; retries and local retries count; the versioning attribute does not', (t) => {
  const at = (s: number) => new Date(Date.UTC(2026, 11, 1, 0, 0, s)).toISOString();
  const e = (id: number, type: string, attributes: object = {}) => ({
    eventId: String(id),
    eventType: `EVENT_TYPE_${type}`,
    eventTime: at(id),
    [`${type.toLowerCase().replace(/_(\w)/g, (_, c: string) => c.toUpperCase())}EventAttributes`]: attributes,
  });
  const events = [
    e(1, 'WORKFLOW_EXECUTION_STARTED'),
    e(2, 'WORKFLOW_EXECUTION_SIGNALED'),
    e(3, 'WORKFLOW_TASK_COMPLETED', { meteringMetadata: { nonfirstLocalActivityExecutionAttempts: 2 } }),
    e(4, 'MARKER_RECORDED', { markerName: 'core_local_activity', workflowTaskCompletedEventId: '3' }),
    e(5, 'MARKER_RECORDED', { markerName: 'core_patch', workflowTaskCompletedEventId: '3' }),
    e(6, 'UPSERT_WORKFLOW_SEARCH_ATTRIBUTES', { searchAttributes: { indexedFields: { TemporalChangeVersion: {} } } }),
    e(7, 'ACTIVITY_TASK_SCHEDULED'),
    e(8, 'ACTIVITY_TASK_STARTED', { attempt: 3 }),
    e(9, 'WORKFLOW_TASK_TIMED_OUT'),
    e(10, 'WORKFLOW_TASK_COMPLETED', { meteringMetadata: {} }),
    e(11, 'MARKER_RECORDED', { markerName: 'core_local_activity', workflowTaskCompletedEventId: '10' }),
    e(12, 'WORKFLOW_EXECUTION_SIGNALED'),
    e(13, 'START_CHILD_WORKFLOW_EXECUTION_INITIATED'),
  ];
  const count = emptyCount();
  countHistory('stray-y', events, Date.parse(at(0)), count);
  t.like(count.byType, {
    start: 1,
    signal: 1,
    'local activities': 2,
    'local activity retry': 2,
    activity: 1,
    'activity retry': 2,
    'search attribute upsert': 0,
    'child workflow': 2,
  });
  t.is(count.total, 11);
  t.deepEqual(count.taskTimeouts, [{ workflowId: 'stray-y', timedOutAt: 9000, resumedAt: 10_000 }]);
  t.is(count.perSecond.find((s) => s.second === 8)?.actions, 2);
});

test("Stripe's figures are the drop's own calls, with the floor of the session endpoint's limit", (t) => {
  const f = stripeFigures({
    before: {
      settings: { accountPerSecond: 25, endpointPerSecond: 25 },
      endpoints: [{ endpoint: 'GET /v1/x', served: 7, limited: 0 }],
    },
    after: {
      settings: { accountPerSecond: 100, endpointPerSecond: 10 },
      endpoints: [
        { endpoint: 'POST /v1/checkout/sessions', served: 40, limited: 12 },
        { endpoint: 'GET /v1/x', served: 7, limited: 0 },
      ],
    },
    units: 30,
    sales: 30,
    sagas: 40,
    checkouts: 40,
    sessionsOpened: 40,
    lastCheckoutMs: 4321,
  });
  t.deepEqual(f.endpoints, [{ endpoint: 'POST /v1/checkout/sessions', served: 40, limited: 12 }]);
  t.is(f.floorSeconds, 3);
  t.is(f.lastCheckoutSeconds, 4.3);
  t.is(f.callsPerSale, 1.33);
  t.is(f.limited, 12);
});
