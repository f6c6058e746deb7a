import test from 'ava';
import { estimateWait } from '../../../api/queue-wait';
import type { RoomRow } from '../../../store/room';
import type { RoomSnapshot } from '../../../store/room-cache';

// The wait a buyer in line is told (api/queue-wait.ts): it grows while nobody is let in, instead of
// the configured pace frozen for minutes (issue 32, item 1), and says when the room is full.

const T0 = Date.parse('2026-12-03T05:00:00Z');
const room: RoomRow = {
  sku: 'hoodie',
  state: 'open',
  soldOut: false,
  admitPerSecond: 0.1,
  maxActive: 2,
  sessionSeconds: 300,
  opensAt: null,
  shuffled: true,
  prequeueSize: 0,
  nextPlace: 10,
  serving: 2,
};
/** Places 1 and 2 let in at T0, one at a time a second apart: the room (maxActive 2) is then full. */
const full: RoomSnapshot = {
  room,
  steps: [
    { firstPlace: 1, lastPlace: 1, admittedAt: new Date(T0), expiresAt: new Date(T0 + 300_000) },
    { firstPlace: 2, lastPlace: 2, admittedAt: new Date(T0 + 1000), expiresAt: new Date(T0 + 301_000) },
  ],
  readAt: T0,
};

test('in a full room the estimate grows with every second nobody is let in, and says the room is full', (t) => {
  const at = (s: number) => estimateWait(full, 1, T0 + 1000 + s * 1000, 20);
  const early = at(15);
  const later = at(75);
  const muchLater = at(13 * 60);
  t.true(early.roomFull);
  t.true(muchLater.roomFull, 'stalled with a buyer ahead: full, though the sessions ended');
  // Thirteen minutes on the sessions have ended, but the buyers inside still pay (their holds outlast
  // the sessions): nobody was let in, and the buyer with one ahead is not told 20 s.
  t.true(later.estimatedWaitSeconds >= early.estimatedWaitSeconds + 55, JSON.stringify({ early, later }));
  t.true(muchLater.estimatedWaitSeconds > 12 * 60, `13 minutes on: ${muchLater.estimatedWaitSeconds} s`);
});

test('buyers who bought and left are not inside: full only while the admitter counts maxActive buyers inside', (t) => {
  // Both sessions still run (the steps), but the admitter's last step found nobody inside.
  const stepped = new Date(T0 + 4_900);
  const left: RoomSnapshot = { ...full, room: { ...room, inside: 0, steppedAt: stepped } };
  t.false(estimateWait(left, 1, T0 + 5_000, 20).roomFull);
  t.true(estimateWait({ ...full, room: { ...room, inside: 2, steppedAt: stepped } }, 1, T0 + 5_000, 20).roomFull);
  // Before the admitter's first count, or with no admitter stepping the room lately: the sessions running.
  t.true(estimateWait({ ...full, room: { ...room, inside: null, steppedAt: stepped } }, 1, T0 + 5_000, 20).roomFull);
  t.true(estimateWait(left, 0, T0 + 60_000, 20).roomFull, 'a count a minute old');
});

test('a paused room stalls too, and its estimate grows though the room is not full', (t) => {
  const paused: RoomSnapshot = { ...full, room: { ...room, state: 'paused', maxActive: 10 } };
  const a = estimateWait(paused, 1, T0 + 60_000, 20);
  const b = estimateWait(paused, 1, T0 + 120_000, 20);
  t.false(a.roomFull);
  t.is(b.estimatedWaitSeconds - a.estimatedWaitSeconds, 60);
});

test('an open room with room inside is no stall: an idle spell before a buyer joins adds nothing', (t) => {
  const roomy: RoomSnapshot = { ...full, room: { ...room, maxActive: 100 } };
  const idle = estimateWait(roomy, 0, T0 + 600_000, 20);
  t.false(idle.roomFull);
  t.is(idle.estimatedWaitSeconds, 10, 'one buyer at the configured 0.1 a second');
});

test('a room idle for minutes is no stall to the buyers who join after: the stall counts from when the line last moved', (t) => {
  // Last let in ten minutes ago; the admitter's last step, half a second ago, found nobody waiting.
  const idle: RoomSnapshot = { ...full, room: { ...room, maxActive: 100, lineMovedAt: new Date(T0 + 599_500) } };
  const second = estimateWait(idle, 1, T0 + 600_000, 20);
  t.false(second.roomFull, 'the second buyer of a burst is not told the room is full');
  t.is(second.estimatedWaitSeconds, 20, 'two buyers at the configured 0.1 a second, no idle minutes added');
  // Nobody let in since with buyers waiting: the stall counts from there.
  const stalled = estimateWait(idle, 1, T0 + 600_000 + 60_000, 20);
  t.true(stalled.roomFull);
  t.true(stalled.estimatedWaitSeconds >= 20 + 49, `${stalled.estimatedWaitSeconds} s`);
});

test('a room whose admissions this process no longer remembers stalled at least a session and the memory', (t) => {
  const forgotten: RoomSnapshot = { ...full, steps: [], room: { ...room, state: 'paused' } };
  t.true(estimateWait(forgotten, 0, T0, 20).estimatedWaitSeconds >= 300 + 60);
});

test('with thousands of steps, the estimate is right whether the room’s shared figures are reused (within 100 ms) or worked out again', (t) => {
  // Many steps, as in a long sale: the figures walk them once, and each buyer's answer reuses them.
  const steps = Array.from({ length: 3000 }, (_, i) => ({
    firstPlace: i + 1,
    lastPlace: i + 1,
    admittedAt: new Date(T0 + i * 100),
    expiresAt: new Date(T0 + i * 100 + 300_000),
  }));
  const busy: RoomSnapshot = { room: { ...room, maxActive: 10_000, serving: 3000 }, steps, readAt: T0 };
  const now = T0 + 300_000;
  const first = estimateWait(busy, 100, now, 20);
  // 9.9 a second measured (99 let in over the last 10 s): 101 buyers to go is 11 s.
  t.is(first.estimatedWaitSeconds, 11);
  t.is(estimateWait(busy, 1000, now + 50, 20).estimatedWaitSeconds, 102, 'a buyer further back, 50 ms later');
  // Past 100 ms they are worked out again: 60 s on, nobody let in since, the measured rate has fallen.
  t.true(estimateWait(busy, 100, now + 60_000, 20).estimatedWaitSeconds > 11);
});
