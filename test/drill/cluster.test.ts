import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import test from 'ava';
import { findHaproxy } from '../../dev/balancer';
import { runDrill } from '../helpers/drill';

// `npm run drill -- --cluster`: the production shape (Postgres, the real Temporal server on it, two
// APIs behind HAProxy, two workers, the emulator), with a worker and an API killed with SIGKILL while
// the sagas run. Every invariant must still hold, and the report must carry what it measured.

test('a cluster drill with a worker and an API killed mid-drop passes every check and reports its costs', async (t) => {
  // A machine's first run builds the Temporal server into the tool cache (about 4 minutes; CI does it first).
  t.timeout(10 * 60_000);
  const out = fs.mkdtempSync(path.join(os.tmpdir(), 'drill-test-cluster-'));
  const buyers = 300;
  const started = Date.now();
  const run = await runDrill([
    ...['--cluster', '--faults', 'worker@1,api@1.5', '--no-baseline'],
    ...['--buyers', String(buyers), '--units', '30', '--hold', '6', '--arrival', '2', '--settle', '45'],
    ...['--seed', '7', '--out', out],
  ]);
  t.log(`cluster drill in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  t.is(run.code, 0, `drill exited ${run.code}:\n${run.stdout}\n${run.stderr.slice(-3000)}`);

  const summary = JSON.parse(fs.readFileSync(path.join(out, 'summary.json'), 'utf8'));
  t.deepEqual(
    summary.invariants.filter((c: any) => c.result !== 'pass'),
    [],
    'every invariant passes, none skipped',
  );
  t.is(summary.invariants.length, 7);
  t.is(
    Object.values<number>(summary.outcomes).reduce((a, b) => a + b, 0),
    buyers,
  );
  t.deepEqual(
    Object.keys(summary.outcomes).filter((o) => o.startsWith('error') || o.startsWith('unsettled')),
    [],
    JSON.stringify(summary.outcomes),
  );
  t.is(summary.headline.oversold, 0);
  t.is(summary.headline.lost, 0);
  t.regex(summary.target, findHaproxy() ? /2 APIs behind HAProxy/ : /without a balancer/);

  // Both faults happened, on the schedule, to the processes named.
  t.deepEqual(
    summary.faults.map((f: any) => [f.kind, f.target, f.error ?? null]),
    [
      ['worker', 'worker-1', null],
      ['api', 'api-1', null],
    ],
  );
  t.true(summary.faults[0].startedAt >= 1000 && summary.faults[0].startedAt < 3000);
  t.log(`worker fault: ${JSON.stringify(summary.faults[0].stalledSagas)}`);

  // What the drop cost: CPU of every kind of process, actions from the histories, Stripe's calls.
  const kinds = summary.cost.rows.map((r: any) => r.kind).sort();
  t.deepEqual(
    kinds,
    ['api', 'emulator', 'postgres', 'temporal', 'worker', ...(findHaproxy() ? ['balancer'] : [])].sort(),
  );
  for (const r of summary.cost.rows) t.true(r.cpuSeconds > 0, `${r.kind} used CPU`);
  t.deepEqual(
    summary.cost.rows.find((r: any) => r.kind === 'api').processes.sort(),
    ['api-1', 'api-2'],
    'the killed API counts until it died',
  );
  t.is(summary.cost.sales, summary.headline.sold);
  const actions = summary.temporalActions;
  t.true(actions.byType.start >= summary.headline.checkouts, 'at least one start per saga');
  t.true(actions.perSale > 3, `${actions.perSale} actions per sale`);
  t.true(summary.stripe.endpoints.some((e: any) => e.endpoint === 'POST /v1/checkout/sessions' && e.served > 0));
  t.true(summary.stripe.sessionsOpened >= summary.headline.checkouts);
  for (const heading of ['Faults', 'CPU by kind of process', 'Temporal actions', 'Stripe (the emulator)'])
    t.true(run.stdout.includes(heading), `the run prints ${heading}`);
  const html = fs.readFileSync(path.join(out, 'report.html'), 'utf8');
  for (const id of ['faults', 'cost', 'actions', 'stripe']) t.true(html.includes(`<h2 id="${id}">`));
});
