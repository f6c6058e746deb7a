import test from 'ava';
import { Batcher } from '../../../store/batcher';

// The batcher the admission reads go through under a crowd: calls that arrive while a batch runs
// share the next one, each caller gets its own answer, and a failed batch fails only its callers.

test('calls made while a batch runs are answered together by the next batch, each with its own answer', async (t) => {
  const batches: number[][] = [];
  const b = new Batcher<number, string>(async (items) => {
    batches.push(items);
    await new Promise((r) => setTimeout(r, 20));
    return items.map((i) => `answer ${i}`);
  });
  const answers = await Promise.all([1, 2, 3, 4, 5].map((i) => b.call(i)));
  t.deepEqual(answers, ['answer 1', 'answer 2', 'answer 3', 'answer 4', 'answer 5']);
  // The first call starts a batch alone; the four made meanwhile share the second.
  t.deepEqual(batches, [[1], [2, 3, 4, 5]]);
});

test('a batch never takes more than its maximum, and a failed batch rejects only its own callers', async (t) => {
  const batches: number[][] = [];
  const b = new Batcher<number, number>(async (items) => {
    batches.push(items);
    if (items.includes(3)) throw new Error('batch with 3 failed');
    return items.map((i) => i * 10);
  }, 2);
  const results = await Promise.allSettled([1, 2, 3, 4, 5].map((i) => b.call(i)));
  t.deepEqual(batches, [[1], [2, 3], [4, 5]]);
  t.deepEqual(
    results.map((r) => (r.status === 'fulfilled' ? r.value : (r.reason as Error).message)),
    [10, 'batch with 3 failed', 'batch with 3 failed', 40, 50],
  );
});
