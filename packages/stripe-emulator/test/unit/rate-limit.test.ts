import test from 'ava';
import { parseRateLimit } from '../../src/rate-limit';

// How the emulator reads the limit it holds the account to. (The limit at work:
// test/rate-limits.test.ts.)

test('STRIPE_EMULATOR_RATE_LIMIT reads as the sandbox default, a number, account/endpoint, or 0', (t) => {
  t.deepEqual(parseRateLimit(undefined), { accountPerSecond: 25, endpointPerSecond: 25 });
  t.deepEqual(parseRateLimit('0'), { accountPerSecond: 0, endpointPerSecond: 0 });
  t.deepEqual(parseRateLimit('10'), { accountPerSecond: 10, endpointPerSecond: 10 });
  t.deepEqual(parseRateLimit('100/25'), { accountPerSecond: 100, endpointPerSecond: 25 });
  t.throws(() => parseRateLimit('fast'), { message: /STRIPE_EMULATOR_RATE_LIMIT=fast/ });
});
