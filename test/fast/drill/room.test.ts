import test from 'ava';
import { pollDelayMs } from '../../../drill/room';

// The drill's buyers poll as the answers tell them (issue 35, item 2).

test('a buyer polls again when the answer says, never later, and not all in step', (t) => {
  const delays = [0, 0.5, 0.999].map((r) => pollDelayMs({ state: 'waiting', nextPollSeconds: 40 }, () => r));
  t.deepEqual(
    delays.map((d) => Math.round(d)),
    [32_000, 36_000, 39_992],
  );
});

test('from an API that does not say, a buyer polls after half the estimate, 1 to 10 s', (t) => {
  const mid = () => 0.5;
  t.is(pollDelayMs({ state: 'waiting', estimatedWaitSeconds: 600 }, mid), 10_000);
  t.is(pollDelayMs({ state: 'waiting', estimatedWaitSeconds: 6 }, mid), 3000);
  t.is(pollDelayMs({ state: 'prequeue', estimatedWaitSeconds: 0 }, mid), 1000);
});
