import test from 'ava';
import { UsageError } from '../../../ops/cli-args';
import { parse } from '../../../ops/migrate-args';

test('npm run migrate takes no arguments: anything else is a usage error, never a migration', (t) => {
  t.deepEqual(parse([]), {});
  t.is(parse(['--help']), 'help');
  t.is(parse(['-h']), 'help');
  for (const argv of [['--dry-run'], ['--check'], ['status'], ['036_sku_check_per_statement.sql']])
    t.throws(() => parse(argv), { instanceOf: UsageError }, argv.join(' '));
});
