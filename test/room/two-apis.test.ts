import test from 'ava';
import { startSystem, type System } from '../helpers/system';
import { until } from '../helpers/poll';
import { Crowd, sleep } from './crowd-helpers';

// Two API processes (each with its own admitter, room cache and gate) against one Postgres: one
// admitter at a time, and both answer the same positions and counts.

let sys: System;
test.before(async () => {
  sys = await startSystem({ worker: false, ownDatabase: true });
});
test.after.always(async () => {
  await sys?.close();
});

/** Sessions holding the admitter's advisory lock, across every process of this database. */
async function lockHolders(): Promise<number> {
  const { rows } = await sys.db.query(
    `SELECT count(*)::int AS n FROM pg_locks
      WHERE locktype = 'advisory' AND granted AND objid = 7402114
        AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`,
  );
  return rows[0].n;
}

test.serial('two API processes: one admitter at a time, the same positions and counts on both', async (t) => {
  const other = await sys.startAnotherApi();
  // The admitters try for the lock at their first step: wait for one to have it.
  await until('an admitter holding the lock', async () => ((await lockHolders()) > 0 ? true : undefined), 10_000);
  t.is(await lockHolders(), 1, 'one session holds the admitter lock');
  t.true(sys.admitters.filter((a) => a.isLeader()).length <= 1, 'at most one of ours believes it is the admitter');

  const sku = await sys.createProduct({ stock: 100, waitingRoom: { admitPerSecond: 20, maxActive: 5 } });
  const c = new Crowd(sys, sku);
  // Half join through each process.
  const a = await c.join(
    Array.from({ length: 20 }, (_, i) => `two-a-${i}`),
    4,
  );
  const b = await c.join(
    Array.from({ length: 20 }, (_, i) => `two-b-${i}`),
    4,
    other,
  );
  // 5 admitted at 20/s: a few admitter steps after the joins.
  for (const until = Date.now() + 10_000; (await c.room()).admitted < 5 && Date.now() < until;) await sleep(50);
  t.like(await c.room(), { admitted: 5, active: 5, waiting: 35 });
  // Nothing moves now (5 inside, none leaves): once each process's room cache has read the record
  // since the fifth admission, both answer alike. A cache refreshes every 200 ms; a loaded machine
  // may take longer, so each ticket is read until the two agree, within a deadline.
  for (const { ticket } of [...a, ...b]) {
    let here: any;
    let there: any;
    await until(
      `the same view of ${ticket} on both`,
      async () => {
        [here, there] = await Promise.all([c.poll(ticket), c.poll(ticket, other)]);
        return here.position === there.position && here.state === there.state ? true : undefined;
      },
      10_000,
    ).catch(() => {});
    t.is(there.position, here.position, 'same position on both');
    t.is(there.state, here.state, 'same state on both');
  }
  const positions = (await Promise.all([...a, ...b].map((x) => c.poll(x.ticket, other)))).map((v) => v.position);
  t.deepEqual(
    positions.filter((p) => p > 0).sort((x, y) => x - y),
    Array.from({ length: 34 }, (_, i) => i + 1),
    'the waiting hold positions 1..34 (and 0 for the first in line and the admitted)',
  );
  t.deepEqual(await c.room(other), await c.room());
  t.like(await c.room(), { admitted: 5, active: 5 }, 'maxActive held across both processes');

  // The admitter's process goes away: the other takes over, and the room keeps admitting.
  // This file's database is its own: one of its two admitters holds the lock.
  const leader = sys.admitters.find((x) => x.isLeader());
  t.truthy(leader, 'one of the two processes is the admitter');
  {
    await leader!.close();
    await sys.db.query(`UPDATE rooms SET max_active = 10 WHERE sku = $1`, [sku]);
    const until = Date.now() + 10_000;
    while ((await c.room()).admitted < 10 && Date.now() < until) await sleep(100);
    t.like(await c.room(), { admitted: 10, active: 10 });
    t.is(sys.admitters.filter((x) => x.isLeader()).length, 1, 'the other process became the admitter');
    t.is(await lockHolders(), 1);
  }
});
