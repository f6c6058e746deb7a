import path from 'node:path';
import test from 'ava';
import { DefaultLogger, Runtime, Worker } from '@temporalio/worker';
import { HISTORIES_DIR, RECORDED_PATHS, recordedHistories, recordedHistoryFiles } from '../../replay/paths';
import { bundleFastWorkflows, FastCoverage } from '../helpers/bundle';
import { workflowSpanSinks } from '../../../worker/tracing';

// The guard of every saga change after 1.0: a change that alters the commands a recorded run made
// (an activity, timer or marker added, removed or reordered) fails here with a nondeterminism error,
// unless it is behind `patched()`. Each folder of test/replay/histories/ is one generation, named by
// the version that recorded it (test/replay/record-histories.ts); see docs/architecture.md, "Changing
// a saga". The fast tier's bundle replays them: its waits are shorter, but a timer's duration is not
// part of what replay compares, and its coverage counts the branches only old histories still take
// (workflows/rules-before-1-2.ts).

Runtime.install({ logger: new DefaultLogger('ERROR') });

const histories = recordedHistoryFiles();

test('the newest generation of recorded histories holds one per path of the sagas', (t) => {
  const newest = [...new Set(histories.map((h) => h.split('/')[0]))].sort(byVersion).at(-1);
  t.truthy(newest, `no generation in ${HISTORIES_DIR}`);
  const names = histories.filter((h) => h.startsWith(`${newest}/`)).map((h) => path.basename(h, '.json'));
  t.deepEqual(names.sort(), [...RECORDED_PATHS].sort());
});

/** Orders version folders (`1.0.0` before `1.10.0`). */
function byVersion(a: string, b: string): number {
  const [pa, pb] = [a, b].map((v) => v.split('.').map(Number));
  for (let i = 0; i < Math.max(pa.length, pb.length); i++) {
    const d = (pa[i] ?? 0) - (pb[i] ?? 0);
    if (d !== 0) return d;
  }
  return 0;
}

test('the current workflow code replays every recorded history of every generation', async (t) => {
  t.timeout(50_000);
  const coverage = new FastCoverage();
  const prebuilt = process.env.FAST_WORKFLOW_BUNDLE_PATH;
  const workflowBundle = prebuilt ? { codePath: prebuilt } : { code: await bundleFastWorkflows() };
  const replayed = Worker.runReplayHistories(
    // Counted during replay too (a sink's calls are skipped in replay unless it asks for them).
    { workflowBundle, sinks: { ...coverage.sinks(true), ...workflowSpanSinks() } },
    recordedHistories(histories),
  );
  const failed: string[] = [];
  let count = 0;
  for await (const result of replayed) {
    count++;
    if (result.error) failed.push(`${result.workflowId}: ${result.error.message}`);
  }
  t.is(count, histories.length);
  t.deepEqual(failed, []);
  coverage.write();
});
