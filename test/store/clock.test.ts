import test, { type ExecutionContext } from 'ava';
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

/**
 * Asserts that `clock` reads Postgres's time: Postgres's clock, read between two reads of `clock`,
 * falls between them, give or take the offset's error bound (and the milliseconds the reads round to).
 * Not "within N ms of one read": the query's own trip, long on a loaded machine, would count as error.
 */
async function assertReadsPostgres(t: ExecutionContext, clock: DbClock, what: string): Promise<void> {
  const before = clock.now();
  const db = await postgresNow();
  const after = clock.now();
  const margin = clock.offset().errorMs + 5;
  t.true(
    db >= before - margin && db <= after + margin,
    `${what}: Postgres ${db}, clock ${before}..${after} ± ${margin}`,
  );
}

test('a host clock an hour off still reads Postgres’s time, to within a few milliseconds', async (t) => {
  for (const skewMs of [3_600_000, -3_600_000, 0]) {
    const clock = new DbClock(pool, { local: () => Date.now() + skewMs });
    // Bracketed by two host reads: the millisecond may turn between any two reads of a clock.
    const hostBefore = Date.now();
    const unmeasured = clock.now();
    const hostAfter = Date.now();
    t.true(
      unmeasured - skewMs >= hostBefore && unmeasured - skewMs <= hostAfter,
      `before it measured: the host’s own clock (${unmeasured} - ${skewMs} in ${hostBefore}..${hostAfter})`,
    );
    await clock.start();
    t.true(Math.abs(clock.offset().offsetMs + skewMs) < 1_000, `offset ${clock.offset().offsetMs} for skew ${skewMs}`);
    await assertReadsPostgres(t, clock, `skew ${skewMs}`);
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
  await assertReadsPostgres(t, clock, 'after the next measurement');
  clock.close();
});

/** The pool, each query answered `delayMs` late while it is set (a busy pool under a crowd). */
function slowPool(delay: { ms: number }): typeof pool {
  return new Proxy(pool, {
    get(target, prop, receiver) {
      const v: unknown = Reflect.get(target, prop, receiver);
      if (prop === 'query' && typeof v === 'function') {
        return async (...args: unknown[]) => {
          const result: unknown = await (v as (...a: unknown[]) => Promise<unknown>).apply(target, args);
          if (delay.ms) await new Promise((r) => setTimeout(r, delay.ms));
          return result;
        };
      }
      return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
    },
  });
}

test('a measurement made slow by a busy pool keeps the offset in use, which it does not contradict', async (t) => {
  const delay = { ms: 0 };
  const clock = new DbClock(slowPool(delay), { local: () => Date.now() - 60_000 });
  await clock.start();
  const good = clock.offset();
  delay.ms = 120; // every round trip 120 ms longer: an error bound of 60 ms or more, the same true offset
  const noisy = await clock.measure();
  t.deepEqual(noisy, good, 'the precise measurement is kept');
  clock.close();
});

test('a measurement made slow by a busy pool is taken when the host clock was stepped meanwhile', async (t) => {
  const delay = { ms: 0 };
  let skewMs = 0;
  const clock = new DbClock(slowPool(delay), { local: () => Date.now() + skewMs });
  await clock.start();
  delay.ms = 120;
  skewMs = 120_000; // NTP stepped the host clock by two minutes
  const taken = await clock.measure();
  t.true(Math.abs(taken.offsetMs + skewMs) < taken.errorMs + 50, `offset ${taken.offsetMs} ± ${taken.errorMs}`);
  t.deepEqual(clock.offset(), taken);
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
  await assertReadsPostgres(t, clock, 'with the last offset');
  clock.close();
});
