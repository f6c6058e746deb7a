import test from 'ava';
import { devOnlyRefusal, isLoopback } from '../../src/dev-only';

// The payments emulator is for development: where it may listen, and when NODE_ENV stops it. (That
// its main obeys the rule: test/dev-only.test.ts.)

test('the dev-only rule: loopback hosts, or STRIPE_EMULATOR=1, and never NODE_ENV=production by itself', (t) => {
  for (const host of ['127.0.0.1', '127.0.0.2', 'localhost', '::1', '[::1]', '::ffff:127.0.0.1']) {
    t.true(isLoopback(host), host);
    t.is(devOnlyRefusal({}, host), null, host);
  }
  for (const host of ['0.0.0.0', '::', '10.0.0.5', 'emulator.internal', '']) {
    t.false(isLoopback(host), host);
    t.regex(devOnlyRefusal({}, host) ?? '', /not a loopback address/, host);
    t.is(devOnlyRefusal({ STRIPE_EMULATOR: '1' }, host), null, host);
  }
  t.regex(devOnlyRefusal({ NODE_ENV: 'production' }, '127.0.0.1') ?? '', /NODE_ENV is production/);
  t.is(devOnlyRefusal({ NODE_ENV: 'production', STRIPE_EMULATOR: '1' }, '0.0.0.0'), null);
  t.regex(devOnlyRefusal({ STRIPE_EMULATOR: 'true' }, '0.0.0.0') ?? '', /not a loopback address/);
});
