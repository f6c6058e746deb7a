import test from 'ava';
import pg from 'pg';
import { Admitter, ADMITTER_LOCK } from '../../store/admitter';
import { createOwnDatabase } from '../helpers/own-database';
import { until } from '../helpers/poll';
import { freezableRelay } from '../helpers/relay';

// The waiting room's admitter is whichever API process holds a Postgres advisory lock on a session of
// its own. When that process is cut off from Postgres (its host gone, a network that drops
// everything), Postgres must end the session and free the lock for another process: until it does,
// no room admits anybody.

test('an admitter cut off from Postgres loses the lock within seconds, and another process takes over', async (t) => {
  const url = new URL(await createOwnDatabase());
  const relay = await freezableRelay(`${url.hostname}:${url.port}`);
  const cutOffUrl = new URL(url);
  cutOffUrl.port = relay.address.slice(relay.address.lastIndexOf(':') + 1);
  const lines: string[] = [];
  const first = new Admitter(cutOffUrl.toString(), { tickMs: 100, retryMs: 200, log: (l) => lines.push(l) });
  const second = new Admitter(url.toString(), { tickMs: 100, retryMs: 200 });
  try {
    first.start();
    await until('the first admitter to take the lock', async () => first.isLeader() || undefined, 20_000, 50);
    second.start();
    await new Promise((r) => setTimeout(r, 1_000));
    t.false(second.isLeader(), 'one admitter at a time');

    // Cut off: no byte moves either way, and its TCP connection stays open (nothing resets it).
    relay.freeze();
    const cutAt = Date.now();
    await until('the second admitter to take the lock', async () => second.isLeader() || undefined, 40_000, 100);
    t.log(`the lock changed hands ${Date.now() - cutAt} ms after the cut`);
    t.false(first.isLeader(), `the first admitter gave up its place: ${lines.join('; ')}`);
    // Cut off, it cannot take the lock back: its new connections go nowhere either.
    await new Promise((r) => setTimeout(r, 1_000));
    t.true(second.isLeader() && !first.isLeader(), 'the second admitter keeps the lock');
  } finally {
    relay.thaw();
    await Promise.all([first.close(), second.close()]);
    await relay.close();
  }
});

test('an admitter closed while it is still connecting takes no lock once the connection opens', async (t) => {
  const url = new URL(await createOwnDatabase());
  const relay = await freezableRelay(`${url.hostname}:${url.port}`);
  const slowUrl = new URL(url);
  slowUrl.port = relay.address.slice(relay.address.lastIndexOf(':') + 1);
  const admitter = new Admitter(slowUrl.toString(), { tickMs: 100, retryMs: 200 });
  const db = new pg.Client({ connectionString: url.toString() });
  await db.connect();
  try {
    relay.freeze();
    admitter.start();
    await new Promise((r) => setTimeout(r, 300)); // its connection waits on the frozen relay
    await admitter.close();
    relay.thaw();
    await new Promise((r) => setTimeout(r, 1_500));
    const { rows } = await db.query(
      `SELECT count(*)::int AS n FROM pg_locks
        WHERE locktype = 'advisory' AND granted AND objid = $1
          AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`,
      [ADMITTER_LOCK],
    );
    t.is(rows[0].n, 0, 'nobody holds the admitter lock');
    t.false(admitter.isLeader());
  } finally {
    relay.thaw();
    await db.end();
    await relay.close();
  }
});
