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

test('a snapshot is as old as the start of its read, not its end', async (t) => {
  // Answers the room row at once, and the steps only after a while (waiting for a connection).
  let roomAskedAt = 0;
  const db = {
    query: async (sql: string) => {
      if (/FROM rooms/.test(sql)) {
        roomAskedAt = Date.now();
        return { rows: [ROOM] };
      }
      await new Promise((r) => setTimeout(r, 300));
      return { rows: [] };
    },
  } as unknown as Db;
  const cache = new RoomCache(db, { clock: { now: () => Date.now() } });
  const snapshot = await cache.get('hoodie');
  t.is(snapshot!.room.serving, 40);
  t.true(roomAskedAt > 0);
  t.true(snapshot!.readAt <= roomAskedAt, `read at ${snapshot!.readAt - roomAskedAt} ms after the room row was asked`);
});
