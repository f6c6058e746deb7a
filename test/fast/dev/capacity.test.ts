import fs from 'node:fs';
import path from 'node:path';
import test from 'ava';
import { readDrop, sizingTable, UsageError } from '../../../dev/capacity';
import { MEASURED, pollsInLine, size } from '../../../dev/capacity-model';

// The capacity model (dev/capacity-model.ts) and `npm run capacity` (dev/capacity.ts): the poll rule
// as the API answers it, the limit that binds, and docs/capacity.md's worked examples as printed.

test('a buyer far back asks about once a minute, one near the head often', (t) => {
  // 50,000 places back in a line moving at 19 a second: 10 minutes of waiting, at most one poll a minute.
  const far = pollsInLine(50_000, 19, 600);
  t.true(far >= 9 && far <= 12, `${far} polls`);
  // The rule before (half the estimate, at most 10 s) asked 60 times over the same 10 minutes.
  t.true(far < 60 / 4);
  // 100 places back at 19 a second: a few polls until the turn, the last ones about a second apart.
  const near = pollsInLine(100, 19, Infinity);
  t.true(near >= 2 && near <= 6, `${near} polls`);
  // Told the drill's 0.9 of each interval: a little more often, never less.
  t.true(pollsInLine(50_000, 19, 600, 19, 0.9) >= far);
});

test('the pace is the tightest limit, and the sagas follow the units', (t) => {
  const drop = readDrop(['--units', '10000', '--buyers', '100000']);
  const z = size(drop);
  t.is(z.boundBy, 'the session budget');
  t.is(Math.round(z.pace * 10) / 10, Math.round((20 / MEASURED.sessions) * 10) / 10);
  t.is(z.sagas, Math.round(10_000 * MEASURED.sagasPerSale));
  t.is(z.refused, 100_000 - z.sagas);
  const cloud = size(
    readDrop(['--units', '10000', '--buyers', '100000', '--session-budget', '400', '--temporal-cloud', '100']),
  );
  t.is(cloud.boundBy, 'Temporal Cloud');
  // Leaving when told sold out for now costs the crowd less than waiting for the end.
  const leave = size(readDrop(['--units', '10000', '--buyers', '100000', '--leave']));
  t.true(leave.crowd.polls < z.crowd.polls);
  t.true(leave.crowd.buyerMinutes < z.crowd.buyerMinutes);
});

test('a bad command line is a usage error', (t) => {
  t.throws(() => readDrop(['--buyers', '10']), { instanceOf: UsageError, message: /--units is required/ });
  t.throws(() => readDrop(['--units', '10', '--buyers', 'many']), { instanceOf: UsageError });
  t.throws(() => readDrop(['--units', '10', '--buyers', '10', '--page-share', '2']), { instanceOf: UsageError });
  t.throws(() => readDrop(['--units', '10', '--buyers', '10', '--what']), { instanceOf: UsageError });
});

test("docs/capacity.md's worked examples are what npm run capacity prints", (t) => {
  const doc = fs.readFileSync(path.resolve(__dirname, '../../../docs/capacity.md'), 'utf8');
  const blocks = [...doc.matchAll(/```\n\$ npm run capacity -- (.+)\n([\s\S]*?)```/g)];
  t.true(blocks.length >= 1, 'no worked example in docs/capacity.md');
  for (const [, args, printed] of blocks) {
    const drop = readDrop(args.split(/\s+/));
    t.is(printed.trimEnd(), sizingTable(drop, size(drop)), `npm run capacity -- ${args}`);
  }
});
