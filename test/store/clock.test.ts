import test from 'ava';
import { DbClock } from '../../store/clock';
import { testDb } from '../helpers/db';

// The database's clock as an API process sees it: its own clock plus a measured offset.

const pool = testDb(2);
test.after.always(() => pool.end());

async function postgresNow(): Promise<number> {
  const { rows } = await pool.query<{ at: number }>(
    'SELECT (extract(epoch FROM clock_timestamp()) * 1000)::float8 AS at',
  );
  return rows[0].at;
}

test('a host clock an hour off still reads Postgres’s time, to within a few milliseconds', async (t) => {
  for (const skewMs of [3_600_000, -3_600_000, 0]) {
    const clock = new DbClock(pool, { local: () => Date.now() + skewMs });
    t.is(clock.now() - Date.now(), skewMs, 'before it measured: the host’s own clock');
    await clock.start();
    t.true(Math.abs(clock.offset().offsetMs + skewMs) < 1_000, `offset ${clock.offset().offsetMs} for skew ${skewMs}`);
    const before = clock.now();
    const db = await postgresNow();
    const after = clock.now();
    const margin = clock.offset().errorMs + 5;
    t.true(db >= before - margin && db <= after + margin, `Postgres ${db}, clock ${before}..${after}`);
    clock.close();
  }
});

test('a host clock that jumps is followed at the next measurement', async (t) => {
  let skewMs = 0;
  const clock = new DbClock(pool, { local: () => Date.now() + skewMs });
  await clock.start();
  skewMs = 120_000;
  t.true(clock.now() - Date.now() > 100_000, 'until it measures again, the jump shows');
  await clock.measure();
  t.true(Math.abs(clock.now() - (await postgresNow())) < 50);
  clock.close();
});

test('a measurement that fails keeps the last offset', async (t) => {
  let down = false;
  // The pool, with Postgres unreachable while `down`.
  const flaky = new Proxy(pool, {
    get(target, prop, receiver) {
      if (prop === 'query' && down) return () => Promise.reject(new Error('connection terminated'));
      const v: unknown = Reflect.get(target, prop, receiver);
      return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
    },
  });
  const clock = new DbClock(flaky, { local: () => Date.now() - 60_000 });
  await clock.start();
  const offset = clock.offset();
  down = true;
  await t.throwsAsync(() => clock.measure(), { message: /connection terminated/ });
  t.deepEqual(clock.offset(), offset);
  down = false;
  t.true(Math.abs(clock.now() - (await postgresNow())) < 50);
  clock.close();
});
