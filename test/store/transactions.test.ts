import test from 'ava';
import { withTx } from '../../store/db';
import { testDb } from '../helpers/db';

// A connection checked out for a transaction is no longer watched by the pool: if Postgres ends it
// between two statements (a restart, an operator's pg_terminate_backend), the client emits 'error'
// with no one listening, and Node ends the whole process. The worker died this way in the outage
// test when Postgres was stopped under load.

const db = testDb(2);
const other = testDb(1);
test.after.always(async () => {
  await db.end();
  await other.end();
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

test('a transaction whose connection dies between two statements rejects, and the process lives on', async (t) => {
  const failed = await t.throwsAsync(
    withTx(db, async (tx) => {
      const { rows } = await tx.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
      await other.query('SELECT pg_terminate_backend($1)', [rows[0].pid]);
      // The connection's end arrives while no statement of this transaction runs.
      await sleep(500);
      await tx.query('SELECT 1');
    }),
  );
  t.truthy(failed);
  // The dead connection was not pooled again: the next transaction gets a live one.
  const one = await withTx(db, async (tx) => (await tx.query<{ one: number }>('SELECT 1 AS one')).rows[0].one);
  t.is(one, 1);
});
