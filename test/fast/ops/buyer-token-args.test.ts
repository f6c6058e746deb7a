import test from 'ava';
import { UsageError } from '../../../ops/cli-args';
import { parse } from '../../../ops/buyer-token-args';

// `npm run buyer-token`'s command line (ops/buyer-token-args.ts), without signing anything.

for (const [argv, message] of [
  [[], /^missing <buyerId>$/],
  [[' '], /^missing <buyerId>$/],
  [['alice', 'bob'], /^unexpected arguments: bob$/],
  [['a'.repeat(129)], /^<buyerId> must be 1 to 128 printable characters$/],
  [['al\nice'], /^<buyerId> must be 1 to 128 printable characters$/],
  [['alice', '--ttl', 'soon'], /^--ttl must be a duration such as 30m or 2h, got "soon"$/],
  [['alice', '--ttl', '500ms'], /^--ttl must be a duration such as 30m or 2h, got "500ms"$/],
] as const) {
  test(`buyer-token ${JSON.stringify(argv)}: a usage error`, (t) => {
    const err = t.throws(() => parse([...argv]), { instanceOf: UsageError });
    t.regex(err.message, message);
  });
}

test('buyer-token parses the buyer and the token lifetime', (t) => {
  t.is(parse(['--help']), 'help');
  t.deepEqual(parse(['alice']), { buyerId: 'alice', ttlSeconds: 3600 });
  t.deepEqual(parse(['alice', '--ttl', '30m']), { buyerId: 'alice', ttlSeconds: 1800 });
});
