import { createHash, randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import { migrate, MIGRATIONS_DIR } from '../../store/migrate';

// A database of a test's own on the suite's Postgres, migrated. Each is a copy (CREATE DATABASE …
// TEMPLATE) of one database migrated once for the run's migrations, not thirty-odd migrations
// applied again for every test that asks. test/store/migrate.test.ts migrates fresh databases itself.

/** Serialises the processes that would make the template at once (any fixed number). */
const TEMPLATE_LOCK = 7_402_129;
/** Postgres's object_in_use: a database still has a session (one just closed may linger a moment). */
const OBJECT_IN_USE = '55006';

function suiteUrl(database?: string): string {
  const url = new URL(process.env.DATABASE_URL!);
  if (database) url.pathname = `/${database}`;
  return url.toString();
}

/** The template's name: one per set of migration files, so a changed or added migration makes a new one. */
function templateName(): string {
  const hash = createHash('sha256');
  for (const file of fs.readdirSync(MIGRATIONS_DIR).sort()) {
    hash.update(file);
    hash.update(fs.readFileSync(path.join(MIGRATIONS_DIR, file)));
  }
  return `test_template_${hash.digest('hex').slice(0, 16)}`;
}

/** Runs a statement that needs a database nobody is connected to, again while a closed session lingers. */
async function whenFree(admin: pg.Client, sql: string): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    try {
      await admin.query(sql);
      return;
    } catch (err) {
      if ((err as { code?: string }).code !== OBJECT_IN_USE || attempt >= 50) throw err;
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}

/**
 * The migrated template, made by the first process that asks while the others wait on its lock. It is
 * migrated under another name and renamed once done, so a run killed half-way leaves no half template.
 */
async function migratedTemplate(admin: pg.Client): Promise<string> {
  const name = templateName();
  await admin.query('SELECT pg_advisory_lock($1)', [TEMPLATE_LOCK]);
  try {
    const { rowCount } = await admin.query('SELECT 1 FROM pg_database WHERE datname = $1', [name]);
    if (!rowCount) {
      const making = `${name}_${randomUUID().slice(0, 8)}`;
      await admin.query(`CREATE DATABASE ${making}`);
      await migrate(suiteUrl(making), () => {});
      await whenFree(admin, `ALTER DATABASE ${making} RENAME TO ${name}`);
    }
  } finally {
    await admin.query('SELECT pg_advisory_unlock($1)', [TEMPLATE_LOCK]);
  }
  return name;
}

let template: Promise<string> | undefined;

/** A new database on the suite's Postgres with every migration applied; its URL. */
export async function createOwnDatabase(): Promise<string> {
  const admin = new pg.Client({ connectionString: suiteUrl() });
  await admin.connect();
  const name = `test_${randomUUID().replace(/-/g, '')}`;
  try {
    template ??= migratedTemplate(admin).catch((err: unknown) => {
      template = undefined;
      throw err;
    });
    await whenFree(admin, `CREATE DATABASE ${name} TEMPLATE ${await template}`);
  } finally {
    await admin.end();
  }
  const url = suiteUrl(name);
  // Nothing to apply (the template has every migration): the check that the copy is current.
  await migrate(url, () => {});
  return url;
}
