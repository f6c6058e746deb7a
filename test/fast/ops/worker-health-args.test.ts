import os from 'node:os';
import test from 'ava';
import { UsageError } from '../../../ops/cli-args';
import { parse } from '../../../ops/worker-health-args';

// The worker container's healthcheck's command line (ops/worker-health-args.ts), without starting it.

test('worker-health refuses a bad command line with a UsageError naming what is wrong', (t) => {
  t.regex(t.throws(() => parse(['now']), { instanceOf: UsageError }).message, /^unexpected arguments: now$/);
  t.regex(
    t.throws(() => parse(['--within', 'soon']), { instanceOf: UsageError }).message,
    /^--within: not a duration: soon$/,
  );
  t.regex(t.throws(() => parse(['--within', '0s']), { instanceOf: UsageError }).message, /^--within: not a duration/);
  t.regex(t.throws(() => parse(['--bogus']), { instanceOf: UsageError }).message, /^Unknown option '--bogus'/);
});

test('worker-health defaults to this host and 60 s', (t) => {
  t.is(parse(['-h']), 'help');
  t.deepEqual(parse([]), { withinMs: 60_000, host: os.hostname() });
  t.deepEqual(parse(['--within', '2m', '--host', 'worker-1']), { withinMs: 120_000, host: 'worker-1' });
});
