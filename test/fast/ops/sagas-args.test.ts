import test from 'ava';
import { UsageError } from '../../../ops/cli-args';
import { parse } from '../../../ops/sagas-args';

// `npm run sagas`'s command line (ops/sagas-args.ts), without starting the CLI: a bad one is a
// UsageError naming what is wrong (the CLI prints it with the usage, exit 2: test/ops/sagas.test.ts
// runs one).

for (const [argv, message] of [
  [[], /^missing command: stuck$/],
  [['list'], /^unknown command: list$/],
  [['stuck', 'now'], /^unknown command: stuck now$/],
  [['stuck', '--older-than', '99999999999d'], /^--older-than: at most 3650d, got 99999999999d$/],
  [['stuck', '--older-than', 'soon'], /^--older-than: not a duration: soon \(try 30s, 5m, 2h\)$/],
  [['stuck', '--limit', '0'], /^--limit: not a positive integer: 0$/],
  [['stuck', '--limit', '1.5'], /^--limit: not a positive integer: 1\.5$/],
  [['stuck', '--bogus'], /^Unknown option '--bogus'/],
  [['stuck', '--sku', ''], /^--sku: not a usable value: $/],
  [['stuck', '--task-queue', 'a"b'], /^--task-queue: not a usable value: a"b$/],
] as const) {
  test(`sagas ${JSON.stringify(argv)}: a usage error`, (t) => {
    const err = t.throws(() => parse([...argv]), { instanceOf: UsageError });
    t.regex(err.message, message);
  });
}

test('the good command lines parse to what the CLI does', (t) => {
  t.is(parse(['stuck', '--help']), 'help');
  t.deepEqual(parse(['stuck']), {
    olderThanMs: 5 * 60_000,
    json: false,
    failOnAny: false,
    limit: 1000,
    sku: undefined,
    taskQueue: undefined,
  });
  t.deepEqual(
    parse([
      'stuck',
      '--older-than',
      '30s',
      '--json',
      '--fail-on-any',
      '--limit',
      '5',
      '--sku',
      's1',
      '--task-queue',
      'q',
    ]),
    { olderThanMs: 30_000, json: true, failOnAny: true, limit: 5, sku: 's1', taskQueue: 'q' },
  );
});
