import test from 'ava';
import type { Db } from '../../../store/db';
import { RoomCache } from '../../../store/room-cache';

// A process's view of a room is dated from the start of its read: the serving counter is read
// first, and a read whose second statement waits (for a connection, under a crowd) must not make
// that counter look younger than it is. The polls' timing (api/next-poll.ts) counts on its age.

const ROOM = {
  sku: 'hoodie',
  state: 'open',
  sold_out: false,
  admit_per_second: 10,
  max_active: 50,
  session_seconds: 300,
  opens_at: null,
  shuffled: true,
  prequeue_size: 0,
  next_place: '100',
  serving: '40',
  units_may_return: null,
  next_return_at: null,
  inside: 10,
  credit_at: new Date(),
  line_moved_at: new Date(),
};

/** Answers the room row at once and the steps after `stepsMs`. */
function slowSteps(stepsMs: number): Db {
  return {
    query: async (sql: string) => {
      if (/FROM rooms/.test(sql)) return { rows: [ROOM] };
      await new Promise((r) => setTimeout(r, stepsMs));
      return { rows: [] };
    },
  } as unknown as Db;
}

test('a snapshot is as old as the start of its read, not its end', async (t) => {
  const cache = new RoomCache(slowSteps(300), { clock: { now: () => Date.now() } });
  const before = Date.now();
  const snapshot = await cache.get('hoodie');
  const after = Date.now();
  t.is(snapshot!.room.serving, 40);
  t.true(after - before >= 300, 'the read waited for its second statement');
  t.true(snapshot!.readAt <= before + 150, `read at ${snapshot!.readAt - before} ms after the call began`);
});
