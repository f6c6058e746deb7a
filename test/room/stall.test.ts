import { randomUUID } from 'node:crypto';
import test from 'ava';
import pg from 'pg';
import { estimateWait } from '../../api/queue-wait';
import { stepAllRooms } from '../../store/admitter';
import { joinRoom, readRoom } from '../../store/room';
import { roomProduct } from '../helpers/db';
import { createOwnDatabase } from '../helpers/own-database';

// A room's stall, as a buyer's poll tells it (roomFull, and the wait it adds), is counted from when
// the line last moved as the admitter's steps saw it: a buyer let in, or nobody waiting. Counted from
// the last admission, a room idle for minutes told the second buyer of the burst that ended the spell
// that the room was full, with the idle minutes added to the wait. The admitter's steps are run here
// by hand, on a database of this file's own where no other admitter steps its rooms.

let url: string;
let db: pg.Pool;
let stepper: pg.Client;
test.before(async () => {
  url = await createOwnDatabase();
  db = new pg.Pool({ connectionString: url, max: 4 });
  stepper = new pg.Client({ connectionString: url });
  await stepper.connect();
});
test.after.always(async () => {
  await stepper?.end();
  await db?.end();
});

const step = () => stepAllRooms(stepper, 20);
/** A step with a second's credit of admissions (the rate would take that long to earn it). */
async function stepWithCredit(sku: string): Promise<void> {
  await db.query('UPDATE rooms SET credit = 1 WHERE sku = $1', [sku]);
  await step();
}
const join = async (sku: string, buyer: string) => (await joinRoom(db, sku, buyer, randomUUID()))!.place!;
async function lineMovedAt(sku: string): Promise<Date | null> {
  const { rows } = await db.query('SELECT line_moved_at FROM rooms WHERE sku = $1', [sku]);
  return rows[0].line_moved_at;
}
/** What a poll says to the buyer at `place`, from the room as a process reads it now. */
async function pollAt(sku: string, place: number) {
  const read = (await readRoom(db, sku, 0))!;
  const { rows } = await db.query<{ now: Date }>('SELECT now()');
  const ahead = place - read.room.serving - 1;
  return estimateWait({ ...read, readAt: Date.now() }, ahead, rows[0].now.getTime(), 20);
}

test.serial(
  'a room idle for ten minutes tells the buyers of the next burst their pace, not that it is full',
  async (t) => {
    const sku = await roomProduct(db, 'idle', { waitingRoom: { admitPerSecond: 0.5, maxActive: 100 } });
    await join(sku, 'idle-ann');
    await stepWithCredit(sku);
    t.truthy(await lineMovedAt(sku), 'Ann let in');
    // Ann was let in ten minutes ago; the admitter has stepped the empty line since.
    await db.query(`UPDATE room_admissions SET admitted_at = admitted_at - interval '10 minutes' WHERE sku = $1`, [
      sku,
    ]);
    await db.query(`UPDATE rooms SET line_moved_at = line_moved_at - interval '10 minutes' WHERE sku = $1`, [sku]);
    await step();
    // The burst, before the admitter's next step: Ben, Cal and Dee wait their turn.
    await join(sku, 'idle-ben');
    const cal = await join(sku, 'idle-cal');
    const dee = await join(sku, 'idle-dee');
    for (const place of [cal, dee]) {
      const told = await pollAt(sku, place);
      t.false(told.roomFull, `place ${place}: ${JSON.stringify(told)}`);
      t.true(told.estimatedWaitSeconds <= 10, `place ${place}: ${told.estimatedWaitSeconds} s at 0.5 a second`);
    }
    await stepWithCredit(sku);
    t.false((await pollAt(sku, dee)).roomFull, 'after Ben is let in');
  },
);

test.serial(
  'a line that waits while nobody is let in stalls from when it last moved, and is told the room is full',
  async (t) => {
    const sku = await roomProduct(db, 'stall', { stock: 1, waitingRoom: { admitPerSecond: 20, maxActive: 100 } });
    await join(sku, 'stall-ann');
    await stepWithCredit(sku);
    const annLetIn = await lineMovedAt(sku);
    t.truthy(annLetIn);
    // Ann is inside and may take the one unit: Ben and Cal wait, and the steps let nobody in.
    await join(sku, 'stall-ben');
    const cal = await join(sku, 'stall-cal');
    await stepWithCredit(sku);
    await stepWithCredit(sku);
    t.deepEqual(await lineMovedAt(sku), annLetIn, 'a step that lets nobody in while buyers wait leaves it');
    t.false((await pollAt(sku, cal)).roomFull, 'not full yet: the line last moved a moment ago');
    // A minute on, nobody let in: the stall is the minute.
    await db.query(`UPDATE rooms SET line_moved_at = line_moved_at - interval '1 minute' WHERE sku = $1`, [sku]);
    await db.query(`UPDATE room_admissions SET admitted_at = admitted_at - interval '1 minute' WHERE sku = $1`, [sku]);
    const told = await pollAt(sku, cal);
    t.true(told.roomFull);
    t.true(told.estimatedWaitSeconds >= 55, `${told.estimatedWaitSeconds} s`);
  },
);
