import { fc, testProp } from '@fast-check/ava';
import test from 'ava';
import { earliestTurn, inLine, MAX_POLL_SECONDS, MIN_POLL_SECONDS, nextPollSeconds } from '../../../api/next-poll';
import type { RoomRow } from '../../../store/room';
import type { RoomSnapshot } from '../../../store/room-cache';

// When a buyer in line asks again (api/next-poll.ts): rarely far from the head, often near it, and
// never after their turn could have come (issue 35, item 2).

const T0 = Date.parse('2026-12-03T05:00:00Z');

function snapshot(admitPerSecond: number | null, readAgoMs = 0): RoomSnapshot {
  const room: RoomRow = {
    sku: 'runner',
    state: 'open',
    soldOut: false,
    admitPerSecond,
    maxActive: 200,
    sessionSeconds: 300,
    opensAt: null,
    shuffled: true,
    prequeueSize: 0,
    nextPlace: 20_001,
    serving: 0,
  };
  return { room, steps: [], readAt: T0 - readAgoMs };
}

/** The rule before issue 35, which the queue page and the drill followed: half the estimate, 1 to 10 s. */
const halfTheEstimate = (eta: number) => Math.min(10, Math.max(1, Math.ceil(eta / 2)));

testProp(
  'a buyer told to wait longer than half the estimate cannot have had their turn when they ask again, even at the fastest pace',
  [
    fc.double({ min: 0.05, max: 500, noNaN: true }),
    fc.integer({ min: 0, max: 50_000 }),
    fc.integer({ min: 0, max: 3000 }),
    fc.integer({ min: 0, max: 100_000 }),
  ],
  (t, rate, ahead, readAgoMs, eta) => {
    const earliest = earliestTurn(snapshot(rate, readAgoMs), ahead, 20, T0);
    const wait = nextPollSeconds(eta, earliest);
    t.true(wait >= MIN_POLL_SECONDS && wait <= MAX_POLL_SECONDS, `${wait} s`);
    if (wait <= halfTheEstimate(eta)) return; // as soon as before: nothing noticed later
    // The admitter's fastest: a full second's credit at once, then `rate` a second, counted from the
    // moment this process read the counter, plus a tick.
    const admittedByThen = Math.max(1, rate) + rate * (readAgoMs / 1000 + wait);
    t.true(admittedByThen <= ahead + 1 + 1e-9, `${admittedByThen} let in before a poll at ${wait} s, ${ahead} ahead`);
  },
);

test('a buyer 5,000 places back in a room admitting 100 a second asks again after about 48 s, not every 10', (t) => {
  const wait = nextPollSeconds(51, earliestTurn(snapshot(100), 5000, 20, T0));
  t.is(wait, 48);
  t.true(wait >= 20, 'far from the head: at least 20 s');
});

test('the head of the line asks as often as before, and a stalled room asks no less often than every 10 s', (t) => {
  t.is(nextPollSeconds(1, earliestTurn(snapshot(100), 0, 20, T0)), 1);
  t.is(nextPollSeconds(4, earliestTurn(snapshot(100), 3, 20, T0)), 2);
  // Nobody let in for ten minutes: the estimate grew with the stall, the head still asks every 10 s.
  t.is(nextPollSeconds(600, earliestTurn(snapshot(100), 10, 20, T0)), 10);
});

test('far back, the wait is capped so news other than a turn (sold out, closed) still arrives', (t) => {
  t.is(nextPollSeconds(3000, earliestTurn(snapshot(2), 5000, 20, T0)), MAX_POLL_SECONDS);
});

test('a room without its own pace counts on the Stripe budget’s, and an old copy of the counter shortens the wait', (t) => {
  t.is(Math.floor(earliestTurn(snapshot(null), 999, 20, T0)), 48); // 1000 places at 20/s, less a second's credit and a tick
  t.is(Math.floor(earliestTurn(snapshot(null, 5000), 999, 20, T0)), 43);
  t.is(earliestTurn(snapshot(100), 50, 20, T0), 0, 'within one second’s credit: any moment');
});

test('a buyer 5,000 places back who follows the answers asks at most 4 times before a turn at full pace, under half as often as before', (t) => {
  const rate = 100;
  const count = (rule: (ahead: number, eta: number) => number) => {
    let now = 0;
    let polls = 0;
    for (;;) {
      // The admitter at full pace: a second's credit, then `rate` a second.
      const served = Math.min(5001, Math.floor(rate + rate * now));
      polls++;
      if (served >= 5001) return polls;
      const ahead = 5000 - served;
      now += rule(ahead, Math.ceil((ahead + 1) / rate));
    }
  };
  const now = count((ahead, eta) => nextPollSeconds(eta, earliestTurn(snapshot(rate), ahead, 20, T0)));
  const before = count((_, eta) => halfTheEstimate(eta));
  t.true(now <= 4, `${now} polls`);
  t.true(before >= 2 * now, `${before} polls before, ${now} now`);
});

test('sold out for now: a buyer within reach of the units that may come back asks as before, one beyond reach every 60 s', (t) => {
  const s = snapshot(100);
  const soldOut = { ...s, room: { ...s.room, unitsMayReturn: 3, nextReturnAt: new Date(T0 + 600_000) } };
  t.deepEqual(inLine(soldOut, 2, 400, 20), {
    nextPollSeconds: 10,
    soldOutForNow: { unitsMayComeBack: 3, nextMayComeBackAt: new Date(T0 + 600_000).toISOString(), withinReach: true },
  });
  t.like(inLine(soldOut, 3, 400, 20), { nextPollSeconds: MAX_POLL_SECONDS, soldOutForNow: { withinReach: false } });
  t.deepEqual(inLine(s, 3, 400, 20), { nextPollSeconds: 10 }, 'not sold out: nothing said');
});
