import test from 'ava';
import { repoRoot } from '../../runner/ava';
import { HEAVY_FILES, splitLanes, stackTestFiles, START_FIRST, WAITING_FILES } from '../../runner/lanes';

test('the stack lanes split every stack file once, long waits first, and each heavy or waiting entry names files that exist', (t) => {
  const all = stackTestFiles(repoRoot);
  t.true(all.length > 80, `${all.length} stack files`);
  t.false(
    all.some((f) => f.startsWith('test/fast/')),
    'no fast file',
  );
  t.true(all.some((f) => f.startsWith('packages/stripe-emulator/test/')));
  const { heavy, light, waiting } = splitLanes(all);
  t.deepEqual([...heavy, ...light, ...waiting].sort(), [...all].sort());
  for (const entry of HEAVY_FILES) {
    t.true(
      all.some((f) => (entry.endsWith('/') ? f.startsWith(entry) : f === entry)),
      `${entry} is a stack file`,
    );
  }
  // A waiting file is in the waiting lane only, even one under a heavy folder (test/e2e/).
  t.deepEqual([...waiting].sort(), [...WAITING_FILES].sort());
  t.true(waiting.some((f) => f.startsWith('test/e2e/')));
  t.false(heavy.some((f) => WAITING_FILES.includes(f)));
  t.true(heavy.includes('test/drill/cluster.test.ts') && heavy.some((f) => f.startsWith('test/e2e/')));
  t.true(light.includes('test/saga/purchase.test.ts'));
  // The longest go first, each in its lane.
  for (const lane of [heavy, light, waiting]) {
    const first = START_FIRST.filter((f) => lane.includes(f));
    t.deepEqual(lane.slice(0, first.length), first);
  }
  t.is(heavy[0], 'test/drill/drill.test.ts');
  t.is(waiting[0], 'test/saga/stripe-budget.test.ts');
});
