import test from 'ava';
import pg from 'pg';
import { JoinDesk } from '../../store/join-desk';
import { countingPool, roomProduct, tableStats, testDb } from '../helpers/db';
import { until } from '../helpers/poll';

// The join desk (issue 35, item 1): a join costs no round trip of its own, a crowd joining again
// writes nothing, and places still follow arrival order.

const db = testDb(8);
test.after.always(() => db.end());

test('100 joins at once, half of them buyers joining again, take at most two statements and keep their tickets', async (t) => {
  const sku = await roomProduct(db, 'join');
  const first = await Promise.all(
    Array.from({ length: 50 }, (_, i) => new JoinDesk(db).join(sku, `b${i}`, `first-${i}`)),
  );
  const counted = countingPool(db, 'room_tickets');
  const desk = new JoinDesk(counted.pool);
  const joins = await Promise.all(Array.from({ length: 100 }, (_, i) => desk.join(sku, `b${i}`, `second-${i}`)));
  t.true(counted.count() <= 2, `${counted.count()} statements for 100 joins`);
  for (let i = 0; i < 50; i++)
    t.like(joins[i], { ticketId: first[i]!.ticketId, place: first[i]!.place, created: false });
  t.deepEqual(
    joins.slice(50).map((j) => [j!.created, j!.place]),
    Array.from({ length: 50 }, (_, i) => [true, 51 + i]),
    'the new buyers in arrival order, after the first 50',
  );

  // What the joins wrote, counted in a transaction of their own (the admitters of the other test
  // files, on the same Postgres, write every room's row at each step: its version says nothing).
  const client = new pg.Client({ connectionString: process.env.DATABASE_URL });
  await client.connect();
  t.teardown(() => client.end());
  let again: Awaited<ReturnType<JoinDesk['join']>>[] = [];
  const written = await tableStats(client, async () => {
    // The desk on one connection: its statements run inside the transaction that counts them.
    const oneConnection = new JoinDesk(client as unknown as pg.Pool);
    again = await Promise.all(Array.from({ length: 100 }, (_, i) => oneConnection.join(sku, `b${i}`, `third-${i}`)));
  });
  t.true(again.every((j) => j && !j.created));
  t.is(written.rooms?.written ?? 0, 0, 'joining again wrote nothing to the room row');
  t.is(written.room_tickets?.written ?? 0, 0, 'nor any ticket');
});

test('a batch that meets a buyer another process placed meanwhile is placed again in one statement, not one per join', async (t) => {
  const sku = await roomProduct(db, 'join-race');
  // Another process's join of b7, not yet committed: the batch does not see it, and its insert waits on it.
  const other = new pg.Client({ connectionString: process.env.DATABASE_URL });
  await other.connect();
  t.teardown(() => other.end());
  await other.query('BEGIN');
  await other.query(`INSERT INTO room_tickets (sku, buyer_id, ticket_id, place) VALUES ($1, 'b7', 'other-7', 1000)`, [
    sku,
  ]);
  const counted = countingPool(db, 'room_tickets');
  const desk = new JoinDesk(counted.pool);
  const joins = Promise.all(Array.from({ length: 100 }, (_, i) => desk.join(sku, `b${i}`, `desk-${i}`)));
  await until('the batch to wait on the other join', async () => {
    const { rows } = await db.query(
      `SELECT 1 FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%room_tickets%' AND query LIKE '%unnest%'`,
    );
    return rows.length > 0 || undefined;
  });
  await other.query('COMMIT');
  const placed = await joins;
  // The first join's batch, then the other 99's, tried twice: b7's insert meets the other's ticket.
  t.true(counted.count() <= 3, `${counted.count()} statements for 100 joins`);
  t.like(placed[7], { ticketId: 'other-7', place: 1000, created: false });
  t.deepEqual(
    placed.filter((_, i) => i !== 7).map((j) => j!.created),
    Array.from({ length: 99 }, () => true),
  );
});
