import path from 'node:path';
import test from 'ava';
import { HISTORIES_DIR, RECORDED_PATHS, recordedHistoryFiles } from '../../replay/paths';
import { generations, replayGenerations } from '../helpers/replay';

// The guard of every saga change after 1.0: a change that alters the commands a recorded run made
// (an activity, timer or marker added, removed or reordered) fails here with a nondeterminism error,
// unless it is behind `patched()`. Each folder of test/replay/histories/ is one generation, named by
// the version that recorded it (test/replay/record-histories.ts); see docs/architecture.md, "Changing
// a saga". The fast tier's bundle replays them: its waits are shorter, but a timer's duration is not
// part of what replay compares, and its coverage counts the branches only old histories still take
// (workflows/rules-before-1-2.ts). This file replays every other generation, the newest among them;
// replay-alternate.test.ts the rest.

test('the newest generation of recorded histories holds one per path of the sagas', (t) => {
  const histories = recordedHistoryFiles();
  const newest = generations(histories).at(-1);
  t.truthy(newest, `no generation in ${HISTORIES_DIR}`);
  const names = histories.filter((h) => h.startsWith(`${newest}/`)).map((h) => path.basename(h, '.json'));
  t.deepEqual(names.sort(), [...RECORDED_PATHS].sort());
});

test('the current workflow code replays every recorded history of the newest generation and every other one before it', (t) => {
  const count = generations().length;
  return replayGenerations(t, (place) => (count - 1 - place) % 2 === 0);
});
