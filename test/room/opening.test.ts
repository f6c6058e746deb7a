import test from 'ava';
import pg from 'pg';
import { stepAllRooms } from '../../store/admitter';
import { startSystem, type System } from '../helpers/system';
import { openNow, roomBuyers } from '../helpers/room';

// The opening, step by step: this file's admitter steps once at start and then not for an hour, so
// the test takes each step itself. Who joined before opensAt is shuffled into the first places; who
// joined after it, even before the admitter's first step since, lines up behind in join order.

let sys: System;
test.before(async () => {
  sys = await startSystem({ roomTickMs: 3_600_000, roomRefreshMs: 100, ownDatabase: true });
});
test.after.always(async () => {
  await sys?.close();
});

const { join, pollUntil } = roomBuyers(() => sys);

test.serial(
  'a join after opensAt but before the first step lines up behind the pre-queue, in join order',
  async (t) => {
    const sku = await sys.createProduct({
      stock: 5,
      waitingRoom: { admitPerSecond: 10, maxActive: 5 },
      opensAt: new Date(Date.now() + 3_600_000).toISOString(),
    });
    const early = Array.from({ length: 20 }, (_, i) => `early-${i}`);
    for (const b of early) t.is((await join(sku, b)).body.state, 'prequeue');

    // Past the opening by Postgres's clock, with no step taken since.
    await openNow(sys.databaseUrl, sku);
    const client = new pg.Client({ connectionString: sys.databaseUrl });
    await client.connect();
    t.teardown(() => client.end());
    const { rows: opened } = await client.query<{ open: boolean }>(
      'SELECT opens_at <= now() AS open FROM rooms WHERE sku = $1',
      [sku],
    );
    t.true(opened[0].open);
    const late = Array.from({ length: 5 }, (_, i) => `late-${i}`);
    const lateTickets: string[] = [];
    for (const b of late) {
      const joined = await join(sku, b);
      t.is(joined.status, 201);
      lateTickets.push(joined.body.ticket);
    }

    await stepAllRooms(client, 20);
    const after = 'after-0';
    t.is((await join(sku, after)).status, 201);

    const { rows } = await client.query<{ buyer_id: string; place: string }>(
      'SELECT buyer_id, place FROM room_tickets WHERE sku = $1',
      [sku],
    );
    const placeOf = new Map(rows.map((r) => [r.buyer_id, Number(r.place)]));
    t.deepEqual(
      early.map((b) => placeOf.get(b)).sort((a, b) => a! - b!),
      Array.from({ length: 20 }, (_, i) => i + 1),
      'the pre-queue holds places 1..20',
    );
    t.deepEqual(
      [...late, after].map((b) => placeOf.get(b)),
      [21, 22, 23, 24, 25, 26],
      'who joined after the opening, in join order',
    );
    // A ticket handed out before its place was known reads its place once the step gave it one.
    for (const [i, ticket] of lateTickets.entries()) {
      const polled = await pollUntil(ticket, (b) => b.state !== 'prequeue');
      t.like(polled, { state: 'waiting', position: 20 + i }, JSON.stringify(polled));
    }
  },
);

test.serial('a room whose step fails is skipped and logged: the rooms after it are still stepped', async (t) => {
  const broken = await sys.createProduct({ stock: 2, waitingRoom: { admitPerSecond: 10, maxActive: 2 } });
  const fine = await sys.createProduct({ stock: 2, waitingRoom: { admitPerSecond: 10, maxActive: 2 } });
  t.is((await join(broken, 'in-the-broken-room')).status, 201);
  t.is((await join(fine, 'in-the-fine-room')).status, 201);
  const client = new pg.Client({ connectionString: sys.databaseUrl });
  await client.connect();
  // Every write to the first room's row fails, as a statement past its timeout would.
  await client.query(`CREATE FUNCTION refuse_room() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN RAISE EXCEPTION 'room % refused by the test', NEW.sku; END $$`);
  await client.query(
    `CREATE TRIGGER refuse_room BEFORE UPDATE ON rooms FOR EACH ROW WHEN (NEW.sku = '${broken}') EXECUTE FUNCTION refuse_room()`,
  );
  t.teardown(async () => {
    await client.query('DROP TRIGGER IF EXISTS refuse_room ON rooms; DROP FUNCTION IF EXISTS refuse_room()');
    await client.end();
  });
  // The broken room was made first, so it is stepped first: a round that stopped at it would leave
  // every later room waiting. A moment's rate credit first (10 a second).
  const lines: string[] = [];
  await new Promise((r) => setTimeout(r, 500));
  await stepAllRooms(client, 20, (line) => lines.push(line));

  const admitted = async (sku: string) =>
    (
      await client.query<{ n: number }>(
        'SELECT count(*)::int AS n FROM room_tickets WHERE sku = $1 AND admitted_at IS NOT NULL',
        [sku],
      )
    ).rows[0].n;
  t.is(await admitted(fine), 1, 'the room after the broken one let its buyer in');
  t.is(await admitted(broken), 0);
  t.true(
    lines.some((l) => l.includes(`the step of ${broken} failed`) && l.includes('refused by the test')),
    lines.join('\n'),
  );
});
