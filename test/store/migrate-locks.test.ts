import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import test, { type ExecutionContext } from 'ava';
import pg from 'pg';
import { migrate, MIGRATIONS_DIR } from '../../store/migrate';

// A migration on a live database: one queued behind a long query would hold every hold and sale
// queued behind itself, so each of its tries waits at most the lock timeout, then gives way.

function suiteUrl(): string {
  const url = process.env.DATABASE_URL;
  if (!url) throw new Error('DATABASE_URL is not set: run the suite with `npm test`, which starts Postgres');
  return url;
}

async function client(t: ExecutionContext, url: string): Promise<pg.Client> {
  const c = new pg.Client({ connectionString: url });
  c.on('error', () => {});
  await c.connect();
  t.teardown(() => c.end().catch(() => {}));
  return c;
}

test('a migration that meets a long query gives way at each try, fails naming the lock after its tries, and applies once the lock is free', async (t) => {
  const name = `migrate_locks_${randomUUID().replace(/-/g, '').slice(0, 12)}`;
  const admin = await client(t, suiteUrl());
  await admin.query(`CREATE DATABASE ${name}`);
  t.teardown(async () => {
    const again = new pg.Client({ connectionString: suiteUrl() });
    await again.connect();
    await again.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    await again.end();
  });
  const url = new URL(suiteUrl());
  url.pathname = `/${name}`;
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'migrations-'));
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  for (const f of fs.readdirSync(MIGRATIONS_DIR)) fs.copyFileSync(path.join(MIGRATIONS_DIR, f), path.join(dir, f));
  await migrate(url.toString(), undefined, { dir });
  fs.writeFileSync(path.join(dir, '999_column.sql'), 'ALTER TABLE products ADD COLUMN colour text;');

  // A report reading products in a long transaction holds its lock until it ends.
  const report = await client(t, url.toString());
  await report.query('BEGIN');
  await report.query('SELECT count(*) FROM products');
  const lines: string[] = [];
  const started = Date.now();
  const err = await t.throwsAsync(
    migrate(url.toString(), (l) => lines.push(l), { dir, lockTimeoutMs: 200, lockTries: 3 }),
  );
  t.regex(
    err.message,
    /migration 999_column\.sql failed: another session held a lock on a table it changes through 3 tries of 200 ms/,
  );
  t.true(Date.now() - started < 10_000, 'it gave up instead of waiting for the report');
  t.is(lines.filter((l) => /waited 200 ms for a table lock/.test(l)).length, 2);
  // Meanwhile the sale's statements were never stuck behind it for more than a try.
  const sale = await client(t, url.toString());
  const { rows } = await sale.query(
    "SELECT to_regclass('schema_migrations') IS NOT NULL AS ok, count(*)::int AS n FROM products",
  );
  t.like(rows[0], { ok: true, n: 0 });

  await report.query('COMMIT');
  t.deepEqual(await migrate(url.toString(), undefined, { dir, lockTimeoutMs: 200, lockTries: 3 }), ['999_column']);
  const column = await sale.query(
    "SELECT 1 FROM information_schema.columns WHERE table_name = 'products' AND column_name = 'colour'",
  );
  t.is(column.rowCount, 1);
});
