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

test('a room whose admissions this process no longer remembers stalled at least a session and the memory', (t) => {
  const forgotten: RoomSnapshot = { ...full, steps: [], room: { ...room, state: 'paused' } };
  t.true(estimateWait(forgotten, 0, T0, 20).estimatedWaitSeconds >= 300 + 60);
});
