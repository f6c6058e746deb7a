import test from 'ava';
import { UsageError } from '../../../ops/cli-args';
import { parse } from '../../../ops/reconcile-args';

// `npm run reconcile`'s command line (ops/reconcile-args.ts), without starting the CLI: a bad one is
// a UsageError naming what is wrong (the CLI prints it with the usage, exit 2: test/ops/reconcile.test.ts
// runs one). An unknown SKU is refused by the CLI itself, once it has read the products.

for (const [argv, message] of [
  [['runner-42'], /^unexpected arguments: runner-42 \(one SKU is given as --sku <sku>\)$/],
  [['--sku'], /^Option '--sku <value>' argument missing$/],
  [['--sku', ''], /^--sku: empty$/],
  [['--sku', '  '], /^--sku: empty$/],
  [['--bogus'], /^Unknown option '--bogus'/],
  [['--sku', 'a', 'b'], /^unexpected arguments: b \(one SKU is given as --sku <sku>\)$/],
] as const) {
  test(`reconcile ${JSON.stringify(argv)}: a usage error`, (t) => {
    const err = t.throws(() => parse([...argv]), { instanceOf: UsageError });
    t.regex(err.message, message);
  });
}

test('the good command lines parse to what the CLI does', (t) => {
  t.is(parse(['--help']), 'help');
  t.is(parse(['-h']), 'help');
  t.deepEqual(parse([]), { sku: undefined, json: false });
  t.deepEqual(parse(['--sku', ' s1 ', '--json']), { sku: 's1', json: true });
});
