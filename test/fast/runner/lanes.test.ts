import test from 'ava';
import { repoRoot } from '../../runner/ava';
import { HEAVY_FILES, splitLanes, stackTestFiles, START_FIRST } from '../../runner/lanes';

test('the stack lanes split every stack file once, long waits first, and each heavy entry names files that exist', (t) => {
  const all = stackTestFiles(repoRoot);
  t.true(all.length > 80, `${all.length} stack files`);
  t.false(
    all.some((f) => f.startsWith('test/fast/')),
    'no fast file',
  );
  t.true(all.some((f) => f.startsWith('packages/stripe-emulator/test/')));
  const { heavy, light } = splitLanes(all);
  t.deepEqual([...heavy, ...light].sort(), [...all].sort());
  for (const entry of HEAVY_FILES) {
    t.true(
      heavy.some((f) => (entry.endsWith('/') ? f.startsWith(entry) : f === entry)),
      `${entry} is a stack file`,
    );
  }
  t.true(heavy.includes('test/drill/cluster.test.ts') && heavy.some((f) => f.startsWith('test/e2e/')));
  t.true(light.includes('test/saga/purchase.test.ts'));
  // The long waits go first, each in its lane.
  for (const [i, f] of START_FIRST.entries()) t.is(light[i], f, `${f} starts the light lane`);
});
