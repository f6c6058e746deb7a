import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import test, { type ExecutionContext } from 'ava';
import pg from 'pg';
import { takeHold } from '../../store/holds';
import { checksumOf, migrate, MigrationRefused, MIGRATIONS_DIR } from '../../store/migrate';
import { API_READY, runEntryPoint, WORKER_READY, type Ended } from '../helpers/entry-point';
import { createProduct } from '../../store/products';
import { reconcile } from '../../store/reconcile';

// Each test gets a database of its own (CREATE DATABASE on the suite's Postgres), so what it
// migrates, breaks or upgrades touches no other test.

const OLDEST_003 = path.join(__dirname, 'fixtures', '003_hold_batch.oldest.sql');
const FILES = fs
  .readdirSync(MIGRATIONS_DIR)
  .filter((f) => f.endsWith('.sql'))
  .sort();
const VERSIONS = FILES.map((f) => f.replace(/\.sql$/, ''));

function suiteUrl(): string {
  const url = process.env.DATABASE_URL;
  if (!url) throw new Error('DATABASE_URL is not set: run the suite with `npm test`, which starts Postgres');
  return url;
}

async function withClient<T>(url: string, fn: (c: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url });
  client.on('error', () => {}); // a scratch database dropped under it: the query in flight fails instead
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

/** A new, empty database, dropped when the test ends. Returns its URL. */
async function scratchDb(t: ExecutionContext): Promise<string> {
  const name = `migrate_${randomUUID().replace(/-/g, '').slice(0, 16)}`;
  await withClient(suiteUrl(), (c) => c.query(`CREATE DATABASE ${name}`));
  t.teardown(() => withClient(suiteUrl(), (c) => c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)));
  const url = new URL(suiteUrl());
  url.pathname = `/${name}`;
  return url.toString();
}

/** A copy of store/migrations to edit, removed when the test ends. */
function migrationsCopy(t: ExecutionContext): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'migrations-'));
  for (const f of FILES) fs.copyFileSync(path.join(MIGRATIONS_DIR, f), path.join(dir, f));
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  return dir;
}

test('with MIGRATE_AT_BOOT=0 the API and the worker migrate nothing: they refuse a database that lacks a migration, naming it, and start on a current one', async (t) => {
  const api = (url: string) => runEntryPoint(['api/main.ts'], { ...entryEnv(url), MIGRATE_AT_BOOT: '0' }, API_READY);
  const worker = (url: string) =>
    runEntryPoint(['worker/main.ts'], { ...entryEnv(url), MIGRATE_AT_BOOT: '0' }, WORKER_READY);
  const RUN_IT = /MIGRATE_AT_BOOT=0 leaves migrating to `npm run migrate` \(the migrate Job on Kubernetes\)/;

  // An empty database: every migration is missing, and the refusal writes nothing.
  const empty = await scratchDb(t);
  for (const [what, ended] of [
    ['the API', await api(empty)],
    ['the worker', await worker(empty)],
  ] as const) {
    const line = fatalLine(t, ended, what);
    t.is(line.level, 'fatal', what);
    t.regex(
      line.msg,
      new RegExp(
        `^refusing to start: ${VERSIONS.length} migrations \\(${VERSIONS[0]} to ${VERSIONS.at(-1)}\\) are not applied`,
      ),
      what,
    );
    t.regex(line.msg, RUN_IT, what);
  }
  const table = await withClient(
    empty,
    async (c) => (await c.query("SELECT to_regclass('schema_migrations') AS r")).rows[0].r,
  );
  t.is(table, null, 'nothing was written: not even the bookkeeping table');

  // A database one release behind: migrated by the files but the last, as before a migrate Job ran.
  const behind = await scratchDb(t);
  const older = migrationsCopy(t);
  fs.rmSync(path.join(older, FILES.at(-1)!));
  await migrate(behind, undefined, { dir: older });
  const [apiBehind, workerBehind] = await Promise.all([api(behind), worker(behind)]);
  for (const [what, ended] of [
    ['the API', apiBehind],
    ['the worker', workerBehind],
  ] as const) {
    const line = fatalLine(t, ended, what);
    t.regex(line.msg, new RegExp(`^refusing to start: migration ${VERSIONS.at(-1)} is not applied to this database`));
    t.regex(line.msg, RUN_IT, what);
  }
  t.deepEqual(
    (await recorded(behind)).map((r) => r.version),
    VERSIONS.slice(0, -1),
    'still one behind',
  );

  // The Job's part (`npm run migrate`), then both start without migrating.
  const job = await runEntryPoint(['ops/migrate.ts'], { DATABASE_URL: behind });
  t.is(job.code, 0, job.stderr);
  t.regex(job.stdout, new RegExp(`applied migration ${VERSIONS.at(-1)}`));
  const [apiUp, workerUp] = await Promise.all([api(behind), worker(behind)]);
  t.true(apiUp.ready, `the API starts on the current schema:\n${apiUp.stdout}${apiUp.stderr}`);
  t.true(workerUp.ready, `the worker starts on the current schema:\n${workerUp.stdout}${workerUp.stderr}`);
  for (const ended of [apiUp, workerUp]) {
    t.regex(ended.stdout, /schema is up to date \(MIGRATE_AT_BOOT=0: not migrating at start\)/);
    t.notRegex(ended.stdout, /applied migration/);
  }
});

/** What the runner before checksums did: a table of names, each file applied in a transaction. */
async function migrateLikeTheOldRunner(url: string, files: Array<{ version: string; path: string }>): Promise<void> {
  await withClient(url, async (c) => {
    await c.query(
      'CREATE TABLE schema_migrations (version text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())',
    );
    for (const f of files) {
      await c.query('BEGIN');
      await c.query(fs.readFileSync(f.path, 'utf8'));
      await c.query('INSERT INTO schema_migrations (version) VALUES ($1)', [f.version]);
      await c.query('COMMIT');
    }
  });
}

const current = (version: string) => ({ version, path: path.join(MIGRATIONS_DIR, `${version}.sql`) });
const oldest003 = { version: '003_hold_batch', path: OLDEST_003 };

/** Everything a migration defines: function bodies, columns, constraints, indexes, triggers. */
async function shape(url: string) {
  return withClient(url, async (c) => {
    const q = async (sql: string) => (await c.query(sql)).rows;
    return {
      functions: await q(`SELECT p.oid::regprocedure::text AS sig, pg_get_functiondef(p.oid) AS def
                            FROM pg_proc p WHERE p.pronamespace = 'public'::regnamespace ORDER BY 1`),
      columns: await q(`SELECT table_name, column_name, data_type, is_nullable, column_default
                          FROM information_schema.columns WHERE table_schema = 'public' ORDER BY 1, 2`),
      constraints: await q(`SELECT conrelid::regclass::text AS tbl, conname, pg_get_constraintdef(oid) AS def
                              FROM pg_constraint WHERE connamespace = 'public'::regnamespace ORDER BY 1, 2`),
      indexes: await q(`SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = 'public' ORDER BY 1`),
      triggers: await q(`SELECT tgrelid::regclass::text AS tbl, tgname, pg_get_triggerdef(oid) AS def
                           FROM pg_trigger WHERE NOT tgisinternal ORDER BY 1, 2`),
    };
  });
}

async function recorded(url: string) {
  return withClient(
    url,
    async (c) => (await c.query('SELECT version, checksum, applied_at FROM schema_migrations ORDER BY version')).rows,
  );
}

/**
 * The allowance case the oldest `reclaim_expired` got wrong: a hold served from bucket 1 with one
 * unit of bucket 0's allowance lapses; the real units go back to bucket 1 and the allowance unit to
 * bucket 0. Returns the buckets' `available` after the reclaim.
 */
async function lapseAnOversoldHold(pool: pg.Pool, sku: string): Promise<number[]> {
  // 5 units over 2 buckets (3 and 2), one unit of allowance (bucket 0's floor is -1), written with
  // the columns every version has (today's createProduct writes columns an old database lacks).
  await pool.query(
    `INSERT INTO products (sku, name, price_cents, currency, total, buckets, hold_seconds, max_per_buyer, oversell_allowance)
     VALUES ($1, 'x', 1, 'usd', 5, 2, 600, 3, 1)`,
    [sku],
  );
  await pool.query(`INSERT INTO stock_buckets (sku, bucket, available, floor) VALUES ($1, 0, 3, -1), ($1, 1, 2, 0)`, [
    sku,
  ]);
  await pool.query(
    `INSERT INTO stock_movements (sku, kind, total_delta, available_delta) VALUES ($1, 'create', 5, 5)`,
    [sku],
  );
  const batch = 'SELECT outcome, bucket, oversold FROM take_holds_batch($1, $2, $3, $4, $5)';
  expectRow(await pool.query(batch, [sku, [`${sku}-a`], ['a'], [3], 0]), { outcome: 'held', bucket: 0, oversold: 0 });
  expectRow(await pool.query(batch, [sku, [`${sku}-b`], ['b'], [3], 1]), { outcome: 'held', bucket: 1, oversold: 1 });
  // Past its lapse and any grace (at most an hour, since migration 014).
  await pool.query("UPDATE holds SET expires_at = now() - interval '3601 seconds' WHERE purchase_id = $1", [
    `${sku}-b`,
  ]);
  await pool.query('SELECT reclaim_expired($1)', [sku]);
  const { rows } = await pool.query<{ available: number }>(
    'SELECT available FROM stock_buckets WHERE sku = $1 ORDER BY bucket',
    [sku],
  );
  return rows.map((r) => r.available);
}

function expectRow(res: pg.QueryResult, want: Record<string, unknown>): void {
  const got = res.rows[0] as Record<string, unknown>;
  for (const [k, v] of Object.entries(want)) {
    if (got[k] !== v)
      throw new Error(`take_holds_batch answered ${JSON.stringify(got)}, expected ${JSON.stringify(want)}`);
  }
}

async function withPool<T>(url: string, fn: (pool: pg.Pool) => Promise<T>): Promise<T> {
  const pool = new pg.Pool({ connectionString: url, max: 2 });
  pool.on('error', () => {});
  try {
    return await fn(pool);
  } finally {
    await pool.end();
  }
}

test('a fresh database gets every migration, each recorded with the sha256 of its file', async (t) => {
  const url = await scratchDb(t);
  t.deepEqual(await migrate(url), VERSIONS);
  const rows = await recorded(url);
  t.deepEqual(
    rows.map((r) => [r.version, r.checksum]),
    FILES.map((f) => [f.replace(/\.sql$/, ''), checksumOf(fs.readFileSync(path.join(MIGRATIONS_DIR, f)))]),
  );
  t.regex(rows[0].checksum, /^[0-9a-f]{64}$/);
});

test('running the migrations again is a no-op', async (t) => {
  const url = await scratchDb(t);
  await migrate(url);
  const before = { rows: await recorded(url), shape: await shape(url) };
  const lines: string[] = [];
  t.deepEqual(await migrate(url, (l) => lines.push(l)), []);
  t.deepEqual(lines, []);
  t.deepEqual({ rows: await recorded(url), shape: await shape(url) }, before);
});

test('several runners at once apply each migration exactly once', async (t) => {
  const url = await scratchDb(t);
  const runs = await Promise.all([migrate(url), migrate(url), migrate(url)]);
  t.deepEqual(runs.flat().sort(), VERSIONS);
  t.is((await recorded(url)).length, VERSIONS.length);
});

const upgrades = test.macro(async (t, applied: Array<{ version: string; path: string }>) => {
  const fresh = await scratchDb(t);
  await migrate(fresh);
  const old = await scratchDb(t);
  await migrateLikeTheOldRunner(old, applied);

  // The old shape, as an old .data/ has it: no take_stock, and the allowance unit goes to the wrong bucket.
  await withPool(old, async (pool) => {
    const { rows } = await pool.query("SELECT to_regprocedure('take_stock(text,integer,integer)') AS f");
    t.is(rows[0].f, null, 'the oldest 003 has no take_stock');
    t.deepEqual(await lapseAnOversoldHold(pool, 'before'), [-1, 3], 'the oldest reclaim_expired misplaces the unit');
  });

  const lines: string[] = [];
  const ran = await migrate(old, (l) => lines.push(l));
  t.deepEqual(
    ran,
    VERSIONS.filter((v) => !applied.some((a) => a.version === v)),
  );
  for (const a of applied)
    t.true(lines.includes(`recorded the checksum of migration ${a.version} (applied before checksums were kept)`));
  // Adopted: every row now carries the checksum of today's file, and the next run accepts them.
  t.deepEqual(
    (await recorded(old)).map((r) => [r.version, r.checksum]),
    (await recorded(fresh)).map((r) => [r.version, r.checksum]),
  );
  t.deepEqual(await shape(old), await shape(fresh), 'functions, columns, constraints, indexes and triggers as fresh');
  t.deepEqual(await migrate(old), []);

  await withPool(old, async (pool) => {
    t.deepEqual(await lapseAnOversoldHold(pool, 'after'), [0, 2], 'the allowance unit is back in bucket 0');
    t.deepEqual(await reconcile(pool, 'after'), []);
    // A hold no single bucket can serve goes through take_stock, which the old shape lacked.
    await createProduct(pool, {
      sku: 'wide',
      name: 'x',
      priceCents: 1,
      currency: 'usd',
      stock: 2,
      buckets: 2,
      maxPerBuyer: 2,
    });
    const held = await takeHold(pool, { purchaseId: 'wide-1', sku: 'wide', buyerId: 'a', quantity: 2 });
    t.is(held.outcome, 'held');
    t.deepEqual(await reconcile(pool, 'wide'), []);
  });
});

test(
  'a .data/ from the first hold desk (001, 002 and the oldest 003) upgrades to the shape of a fresh database',
  upgrades,
  [current('001_inventory'), current('002_purchases'), oldest003],
);

test('a .data/ with 001 to 005 applied and the oldest 003 upgrades to the shape of a fresh database', upgrades, [
  current('001_inventory'),
  current('002_purchases'),
  oldest003,
  current('004_held_by'),
  current('005_stock_notify'),
]);

test('order totals are 64-bit after the upgrade', async (t) => {
  const url = await scratchDb(t);
  await migrateLikeTheOldRunner(url, [current('001_inventory'), current('002_purchases')]);
  await migrate(url);
  const type = await withClient(
    url,
    async (c) =>
      (
        await c.query(
          "SELECT data_type FROM information_schema.columns WHERE table_name = 'purchases' AND column_name = 'amount_cents'",
        )
      ).rows[0].data_type,
  );
  t.is(type, 'bigint');
});

test('an applied migration edited afterwards makes the runner refuse, naming the file, and apply nothing', async (t) => {
  const url = await scratchDb(t);
  const dir = migrationsCopy(t);
  await migrate(url, undefined, { dir });
  fs.appendFileSync(path.join(dir, '003_hold_batch.sql'), '\n-- a fix made in place\n');
  fs.writeFileSync(path.join(dir, '999_pending.sql'), 'CREATE TABLE must_not_exist (id int);');
  const before = await recorded(url);

  const err = await t.throwsAsync(migrate(url, undefined, { dir }), { instanceOf: MigrationRefused });
  t.regex(err.message, /003_hold_batch\.sql changed after it was applied to this database/);
  t.regex(err.message, /An applied migration must never be edited/);
  t.regex(err.message, /new migration/);
  t.notRegex(err.message, /\n/, 'one line');
  t.deepEqual(await recorded(url), before, 'nothing recorded, nothing adopted');
  const table = await withClient(
    url,
    async (c) => (await c.query("SELECT to_regclass('must_not_exist') AS r")).rows[0].r,
  );
  t.is(table, null, 'the pending migration was not applied');
});

test('a migration recorded as applied but missing on disk makes the runner refuse', async (t) => {
  const url = await scratchDb(t);
  const dir = migrationsCopy(t);
  await migrate(url, undefined, { dir });
  fs.rmSync(path.join(dir, '005_stock_notify.sql'));
  const err = await t.throwsAsync(migrate(url, undefined, { dir }), { instanceOf: MigrationRefused });
  t.regex(err.message, /005_stock_notify\.sql is recorded as applied but missing on disk/);
  t.regex(err.message, /newer or different version of the code/);
});

/** What an entry point of the project needs to start against `url` (a development Stripe, Temporal the suite's). */
function entryEnv(url: string): Record<string, string> {
  return {
    DATABASE_URL: url,
    STRIPE_SECRET_KEY: 'sk_test_emulator',
    STRIPE_WEBHOOK_SECRET: 'whsec_test',
    ADMIN_TOKEN: 'a',
    SUPPORT_TOKEN: 's',
    STRIPE_EMULATOR: '1',
    BUYER_TOKEN_SECRET: 'migrate-test-buyer-token-secret-0123456789',
    BOT_CHECK_SECRET: 'migrate-test-bot-check-secret-0123456789',
    PORT: '0',
    WORKER_METRICS_PORT: '0',
    SHUTDOWN_GRACE_MS: '0',
    TASK_QUEUE: `migrate-${randomUUID()}`,
  };
}

/** The one line a service wrote before it exited 1 (a JSON log line on stdout), or a failure naming what it printed. */
function fatalLine(t: ExecutionContext, ended: Ended, what: string): { level: string; msg: string } {
  t.is(ended.code, 1, `${what} exits 1: ${ended.stderr}`);
  t.false(ended.ready, `${what} never got ready`);
  const lines = ended.stdout.trim().split('\n');
  t.is(lines.length, 1, `${what} prints one line: ${ended.stdout}${ended.stderr}`);
  return JSON.parse(lines[0]) as { level: string; msg: string };
}

test('npm run migrate, the worker and the API refuse to start on an edited migration, with one line (a fatal log line for the services)', async (t) => {
  const url = await scratchDb(t);
  await migrate(url);
  // As if 003 had been applied as some other text: today's file no longer matches what was applied.
  await withClient(url, (c) =>
    c.query("UPDATE schema_migrations SET checksum = repeat('0', 64) WHERE version = '003_hold_batch'"),
  );
  for (const script of ['ops/migrate.ts', 'worker/main.ts', 'api/main.ts']) {
    const { code, stdout, stderr } = await runEntryPoint([script], entryEnv(url));
    t.not(code, 0, `${script} exits non-zero`);
    // The CLI tells a person on stderr; the services log JSON on stdout, one `fatal` line.
    const service = script !== 'ops/migrate.ts';
    const out = service ? stdout : stderr;
    const lines = out.trim().split('\n');
    t.is(lines.length, 1, `${script} prints one line: ${out}${stderr}`);
    const message = service
      ? (JSON.parse(lines[0]) as { level: string; msg: string })
      : { level: 'fatal', msg: lines[0] };
    t.is(message.level, 'fatal', script);
    t.regex(message.msg, /store\/migrations\/003_hold_batch\.sql changed after it was applied/, script);
    t.regex(message.msg, /must never be edited/, script);
  }
});
