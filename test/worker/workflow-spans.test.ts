import fs from 'node:fs';
import test from 'ava';
import { DefaultLogger, Runtime, Worker } from '@temporalio/worker';
import { bundleTraces } from '../../worker/create-worker';
import { workflowSpanSinks } from '../../worker/tracing';
import { runEntryPoint, suiteServiceEnv, WORKER_READY } from '../helpers/entry-point';
import { recordedHistories } from '../replay/paths';

// OpenTelemetry's workflow interceptors are bundled only for workers that trace
// (worker/create-worker.ts). The fast tier replays every recorded history on a bundle with them; this
// file replays them on the suite's bundle, without them, as a worker that does not trace runs: the
// interceptors make spans, not commands, so a saga recorded by either kind of worker goes on in the
// other. And a worker that traces refuses a bundle without them.

Runtime.install({ logger: new DefaultLogger('ERROR') });

const suiteBundle = (): string => {
  const file = process.env.WORKFLOW_BUNDLE_PATH;
  if (!file) throw new Error('WORKFLOW_BUNDLE_PATH is not set: run this with `npm test`');
  return file;
};

test('the suite bundle has no workflow spans, and every recorded history replays on it', async (t) => {
  t.timeout(60_000);
  t.false(bundleTraces(fs.readFileSync(suiteBundle(), 'utf8')));
  const histories = recordedHistories();
  const failed: string[] = [];
  let count = 0;
  for await (const result of Worker.runReplayHistories(
    { workflowBundle: { codePath: suiteBundle() }, sinks: workflowSpanSinks() },
    histories,
  )) {
    count++;
    if (result.error) failed.push(`${result.workflowId}: ${result.error.message}`);
  }
  t.is(count, histories.length);
  t.true(count >= 21, `${count} histories`);
  t.deepEqual(failed, []);
});

test('a worker that traces refuses a bundle without the workflow spans, naming it, and does not poll', async (t) => {
  t.timeout(90_000);
  const ended = await runEntryPoint(
    ['worker/main.ts'],
    {
      ...suiteServiceEnv('workflow-spans'),
      // Nothing listens there: the worker must stop before it exports anything.
      OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:9',
      WORKFLOW_BUNDLE_PATH: suiteBundle(),
    },
    WORKER_READY,
  );
  t.false(ended.ready, 'it polled');
  t.is(ended.code, 1);
  const said = ended.stdout + ended.stderr;
  t.regex(said, /tracing is on but the workflow bundle \(.*\) was built without the workflow spans/);
  t.true(said.includes(suiteBundle()), said);
});
