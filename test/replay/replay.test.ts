import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import test from 'ava';
import { historyFromJSON } from '@temporalio/common/lib/proto-utils';
import { Worker } from '@temporalio/worker';
import { workflowBundle } from '../helpers/system';
import { RECORDED_PATHS } from './paths';

// The guard of every saga change after 1.0: a change that alters the commands a recorded run made
// (an activity, timer or marker added, removed or reordered) fails here with a nondeterminism error,
// unless it is behind `patched()`. Each folder of histories/ is one generation, named by the version
// that recorded it (test/replay/record-histories.ts); see docs/architecture.md, "Changing a saga".

const dir = path.join(__dirname, 'histories');
const histories = readdirSync(dir, { withFileTypes: true })
  .filter((d) => d.isDirectory())
  .flatMap((generation) =>
    readdirSync(path.join(dir, generation.name))
      .filter((f) => f.endsWith('.json'))
      .map((f) => `${generation.name}/${f}`),
  );

test('the newest generation of recorded histories holds one per path of the sagas', (t) => {
  const newest = [...new Set(histories.map((h) => h.split('/')[0]))].sort(byVersion).at(-1);
  t.truthy(newest, `no generation in ${dir}`);
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

for (const file of histories) {
  test(`the current workflow code replays the recorded ${file.replace('.json', '')} history`, async (t) => {
    const history = historyFromJSON(JSON.parse(readFileSync(path.join(dir, file), 'utf8')));
    await t.notThrowsAsync(Worker.runReplayHistory({ workflowBundle: await workflowBundle() }, history, file));
  });
}
