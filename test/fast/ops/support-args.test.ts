import test from 'ava';
import { UsageError } from '../../../ops/cli-args';
import { parse, USAGE } from '../../../ops/support-args';

// `npm run support`'s command line (ops/support-args.ts), without starting the CLI: every bad
// argument list is a UsageError naming what is wrong (the CLI prints it with the usage, exit 2:
// test/ops/support.test.ts runs one), and the good ones say what to do.

const refusals: [string[], RegExp][] = [
  [
    [],
    /^missing command: one of find, refund, refund-oversold, retry, settle, retry-stray, settle-stray, list-attention, disputes, notifications$/,
  ],
  [['refnud', 'p1', '--reason', 'x'], /^unknown command: refnud$/],
  [['refund'], /^missing <purchaseId>$/],
  [['refund', 'p1'], /^--reason is required \(it goes to the buyer word for word/],
  [['refund', 'p1', '--reason', '  '], /^--reason is required/],
  [['refund', 'p1', 'p2', '--reason', 'x'], /^unexpected arguments: p2$/],
  [['refund', 'p1', '--reason', 'x', '--force'], /^Unknown option '--force'/],
  [['refund', 'p1', '--reason'], /^Option '--reason <value>' argument missing$/],
  [['refund', 'p1', '--reason', 'x'.repeat(501)], /^--reason must be at most 500 characters$/],
  [['refund', 'p1', '--reason', 'x', '--note', ' '], /^--note is required \(or leave it out: it is kept internal\)$/],
  [['refund', 'p', '--buyer', 'a'], /^--buyer only applies to find$/],
  [['refund', 'p', '--reason', 'x', '--json'], /^--json only applies to find$/],
  [['refund', 'p', '--reason', 'x', '--sku', 's'], /^--sku does not apply to refund$/],
  [['refund-oversold', '--reason', 'x'], /^missing <sku>$/],
  [
    ['refund-oversold', 'sku-1', '--reason', 'x', '--restock'],
    /^--restock does not apply: oversold units always go back/,
  ],
  [['retry'], /^missing <purchaseId>$/],
  [['retry', 'p1', '--note', 'x'], /^--note does not apply to retry$/],
  [['retry', 'p1', 'p2'], /^unexpected arguments: p2$/],
  [['settle', 'p1'], /^--note is required \(say what was done by hand/],
  [['settle', 'p1', '--note', '  '], /^--note is required/],
  [['settle', 'p1', '--note', '\u0000\n'], /^--note is required/],
  [['settle', 'p1', '--note', 'x', '--reason', 'y'], /^--reason does not apply to settle$/],
  [['settle', 'p1', '--note', 'x'.repeat(501)], /^--note must be at most 500 characters$/],
  [['retry-stray'], /^missing <sessionId>$/],
  [['retry-stray', 'cs_1', '--restock'], /^--restock does not apply to retry-stray$/],
  [['settle-stray', 'cs_1'], /^--note is required/],
  [['list-attention', 'extra'], /^unexpected arguments: extra$/],
  [['list-attention', '--restock'], /^--restock does not apply to list-attention$/],
  [
    ['list-attention', '--channel', 'email'],
    /^--channel only applies to notifications, --all to notifications and disputes$/,
  ],
  [['list-attention', '--all'], /^--channel only applies to notifications, --all to notifications and disputes$/],
  [['disputes', 'p1'], /^unexpected arguments: p1$/],
  [['disputes', '--reason', 'x'], /^--reason does not apply to disputes$/],
  [['disputes', '--buyer', 'a'], /^--buyer does not apply to disputes$/],
  [['disputes', '--json'], /^--restock and --json do not apply to disputes$/],
  [['find'], /^find: give exactly one of --buyer, --session, --payment-intent$/],
  [['find', '--buyer', 'a', '--session', 'b'], /^find: give exactly one of --buyer, --session, --payment-intent$/],
  [['find', 'x'], /^unexpected arguments: x$/],
  [['find', '--buyer', ' '], /^--buyer: must be 1 to 256 characters$/],
  [['find', '--session', 'c'.repeat(257)], /^--session: must be 1 to 256 characters$/],
  [['notifications'], /^missing notifications command: list or retry$/],
  [['notifications', 'show'], /^unknown notifications command: show$/],
  [['notifications', 'list', 'x'], /^unexpected arguments: x$/],
  [['notifications', 'list', '--all'], /^--all only applies to notifications retry$/],
  [['notifications', 'list', '--reason', 'x'], /^--reason does not apply to notifications$/],
  [['notifications', 'list', '--restock'], /^--restock does not apply to notifications$/],
  [['notifications', 'list', '--buyer', 'a'], /^--buyer does not apply to notifications$/],
  [['notifications', 'retry'], /^notifications retry: give notification ids, or --all$/],
  [['notifications', 'retry', 'nope'], /^not a notification id: "nope" \(ntf_<n> or <n>\)$/],
  [['notifications', 'retry', 'ntf_0'], /^not a notification id: "ntf_0"/],
  [['notifications', 'retry', 'ntf_1', '--all'], /^give notification ids or --all, not both$/],
  [['notifications', 'retry', '--all', '--json'], /^--json only applies to notifications list$/],
];

for (const [argv, message] of refusals) {
  test(`support ${JSON.stringify(argv).slice(0, 70)}: a usage error`, (t) => {
    const err = t.throws(() => parse(argv), { instanceOf: UsageError });
    t.regex(err.message, message);
  });
}

test('the good command lines parse to what the CLI does', (t) => {
  t.is(parse(['--help']), 'help');
  t.is(parse(['refund', '-h']), 'help');
  t.deepEqual(parse(['refund', ' p1 ', '--reason', ' wrong size ']), {
    command: 'refund',
    purchaseId: 'p1',
    reason: 'wrong size',
    restock: false,
    note: undefined,
  });
  t.deepEqual(parse(['refund', 'p1', '--reason', 'dup', '--restock', '--note', 'internal']), {
    command: 'refund',
    purchaseId: 'p1',
    reason: 'dup',
    restock: true,
    note: 'internal',
  });
  // Cleaned as the API cleans it: a newline would forge a line in a log or a notification.
  t.like(parse(['refund', 'p1', '--reason', 'late\n[fake] line\u0000', '--note', '\tin\u0085ternal ']), {
    reason: 'late [fake] line',
    note: 'in ternal',
  });
  t.deepEqual(parse(['refund-oversold', 'sku-1', '--reason', 'sorry']), {
    command: 'refund-oversold',
    sku: 'sku-1',
    reason: 'sorry',
    note: undefined,
  });
  // retry and settle (and their -stray twins) only differ in what they tell the saga: the
  // refusals of what does not wait for support are the same path (test/ops/support.test.ts).
  t.deepEqual(parse(['retry', 'no-such-purchase']), {
    command: 'attend',
    on: 'purchase',
    target: 'no-such-purchase',
    verb: { action: 'retry' },
  });
  t.deepEqual(parse(['settle', 'p1', '--note', ' by bank transfer ']), {
    command: 'attend',
    on: 'purchase',
    target: 'p1',
    verb: { action: 'settled', note: 'by bank transfer' },
  });
  t.deepEqual(parse(['retry-stray', 'cs_test_unknown']), {
    command: 'attend',
    on: 'stray',
    target: 'cs_test_unknown',
    verb: { action: 'retry' },
  });
  t.deepEqual(parse(['settle-stray', 'cs_test_unknown', '--note', 'x']), {
    command: 'attend',
    on: 'stray',
    target: 'cs_test_unknown',
    verb: { action: 'settled', note: 'x' },
  });
  t.deepEqual(parse(['list-attention']), { command: 'list-attention', sku: undefined });
  t.deepEqual(parse(['list-attention', '--sku', ' s1 ']), { command: 'list-attention', sku: 's1' });
  t.deepEqual(parse(['disputes']), { command: 'disputes', all: false, sku: undefined });
  t.deepEqual(parse(['disputes', '--all', '--sku', 's1']), { command: 'disputes', all: true, sku: 's1' });
  t.deepEqual(parse(['find', '--buyer', 'alice']), { command: 'find', by: { buyerId: 'alice' }, json: false });
  t.deepEqual(parse(['find', '--session', 'cs_1', '--json']), {
    command: 'find',
    by: { sessionId: 'cs_1' },
    json: true,
  });
  t.deepEqual(parse(['find', '--payment-intent', 'pi_1']), {
    command: 'find',
    by: { paymentIntentId: 'pi_1' },
    json: false,
  });
  t.deepEqual(parse(['notifications', 'list', '--channel', 'email', '--json']), {
    command: 'notifications',
    action: 'list',
    channel: 'email',
    json: true,
  });
  t.deepEqual(parse(['notifications', 'retry', 'ntf_12', '7']), {
    command: 'notifications',
    action: 'retry',
    channel: undefined,
    ids: ['12', '7'],
  });
  t.deepEqual(parse(['notifications', 'retry', '--all', '--channel', 'webhook']), {
    command: 'notifications',
    action: 'retry',
    channel: 'webhook',
    ids: undefined,
  });
});

test('the usage names every command', (t) => {
  for (const command of ['find', 'refund', 'refund-oversold', 'retry', 'settle', 'retry-stray', 'settle-stray']) {
    t.regex(USAGE, new RegExp(`npm run support -- ${command} `), command);
  }
  t.regex(USAGE, /npm run support -- list-attention/);
  t.regex(USAGE, /npm run support -- notifications list/);
  t.regex(USAGE, /npm run support -- notifications retry/);
});
