import { createHash } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import pg from 'pg';

/** Where the migrations live: `NNN_name.sql`, applied in name order. */
export const MIGRATIONS_DIR = path.join(__dirname, 'migrations');
// Any fixed number: serialises concurrent migrators (several API/worker processes booting at once).
const MIGRATION_LOCK = 7_402_113;

/**
 * The runner will not touch a database whose applied migrations no longer match the files: an
 * applied file was edited, or one is missing. Nothing was applied. The message is for the operator.
 */
export class MigrationRefused extends Error {
  constructor(message: string) {
    super(message);
    // The entry points print the error itself: one sentence, no frames of the runner under it.
    this.stack = `${this.name}: ${message}`;
  }
}
MigrationRefused.prototype.name = 'MigrationRefused';

export interface MigrateOptions {
  /** The folder of `NNN_name.sql` files (tests point it at a copy); `store/migrations` by default. */
  dir?: string;
  /** How long one try of a migration waits for a table lock (Postgres's `lock_timeout`); 5 s by default. */
  lockTimeoutMs?: number;
  /** Tries of a migration that met a lock held too long, the lock timeout apart; 6 by default. */
  lockTries?: number;
}

/** SQLSTATE lock_not_available: a statement gave up waiting for a lock at `lock_timeout`. */
const LOCK_NOT_AVAILABLE = '55P03';

interface MigrationFile {
  version: string;
  file: string;
  sql: string;
  checksum: string;
}

/** The checksum recorded per migration: sha256 (hex) of the file's bytes. */
export function checksumOf(contents: string | Buffer): string {
  return createHash('sha256').update(contents).digest('hex');
}

async function readMigrations(dir: string): Promise<MigrationFile[]> {
  const files = (await readdir(dir)).filter((f) => f.endsWith('.sql')).sort();
  return Promise.all(
    files.map(async (file) => {
      const bytes = await readFile(path.join(dir, file));
      return { version: file.replace(/\.sql$/, ''), file, sql: bytes.toString('utf8'), checksum: checksumOf(bytes) };
    }),
  );
}

/** A path the operator can find: relative to where the process runs, when it is below it. */
function shown(dir: string, file: string): string {
  const full = path.join(dir, file);
  const rel = path.relative(process.cwd(), full);
  return rel.startsWith('..') || path.isAbsolute(rel) ? full : rel;
}

/**
 * Compares what `schema_migrations` says was applied with the files: every problem in one message,
 * or null. A row without a checksum (written by the runner before checksums were kept) is not
 * compared here; it adopts the file's checksum afterwards.
 */
function refusal(dir: string, recorded: Map<string, string | null>, files: MigrationFile[]): string | null {
  const byVersion = new Map(files.map((f) => [f.version, f]));
  const edited: string[] = [];
  const missing: string[] = [];
  for (const [version, checksum] of recorded) {
    const file = byVersion.get(version);
    if (!file) missing.push(shown(dir, `${version}.sql`));
    else if (checksum !== null && checksum !== file.checksum) {
      const sums = `sha256 ${checksum.slice(0, 12)}… when applied, ${file.checksum.slice(0, 12)}… now`;
      edited.push(`${shown(dir, file.file)} changed after it was applied to this database (${sums})`);
    }
  }
  const problems: string[] = [];
  if (edited.length) {
    problems.push(
      `${edited.join('; ')}. An applied migration must never be edited: ` +
        'restore the file as it was, and put the change in a new migration',
    );
  }
  if (missing.length) {
    problems.push(
      `${missing.join(', ')} ${missing.length > 1 ? 'are' : 'is'} recorded as applied but missing on disk: ` +
        'this database was migrated by a newer or different version of the code; run that version, or restore the file',
    );
  }
  return problems.length ? `refusing to migrate: ${problems.join('. ')}.` : null;
}

/** What `schema_migrations` records (version → checksum, null for a row from before checksums), and the files, checked against each other. */
async function readChecked(
  client: pg.Client,
  dir: string,
): Promise<{ recorded: Map<string, string | null>; files: MigrationFile[] }> {
  // `SELECT *`: a table made before checksums were kept has no such column (read as null).
  const rows = (await client.query<{ version: string; checksum?: string | null }>('SELECT * FROM schema_migrations'))
    .rows;
  const recorded = new Map(rows.map((r) => [r.version, r.checksum ?? null]));
  const files = await readMigrations(dir);
  const refused = refusal(dir, recorded, files);
  if (refused) throw new MigrationRefused(refused);
  return { recorded, files };
}

async function connected<T>(databaseUrl: string, fn: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: databaseUrl });
  // A connection lost mid-run fails the query in flight; the event itself must not crash the process.
  client.on('error', () => {});
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

/**
 * The migrations the database lacks (versions, in name order), read from `schema_migrations`
 * without its lock and without writing anything; all of them when the table is not there. Throws
 * `MigrationRefused` where `migrate()` would: an applied file changed, or one is missing on disk.
 */
export async function pendingMigrations(databaseUrl: string, opts: MigrateOptions = {}): Promise<string[]> {
  const dir = opts.dir ?? MIGRATIONS_DIR;
  return connected(databaseUrl, async (client) => {
    const table = await client.query<{ t: string | null }>("SELECT to_regclass('schema_migrations')::text AS t");
    if (table.rows[0].t === null) return (await readMigrations(dir)).map((f) => f.version);
    const { recorded, files } = await readChecked(client, dir);
    return files.filter((f) => !recorded.has(f.version)).map((f) => f.version);
  });
}

/** A service told not to migrate (MIGRATE_AT_BOOT=0) found migrations it needs not applied. */
export class MigrationsPending extends MigrationRefused {}
MigrationsPending.prototype.name = 'MigrationsPending';

/**
 * The schema step of the API's and the worker's start. `migrateAtBoot` (MIGRATE_AT_BOOT=1, the
 * default): apply what is missing (`migrate()`). Otherwise something else migrates (`npm run
 * migrate`, the migrate Job on Kubernetes) and this only checks: a migration not applied throws
 * `MigrationsPending`, one line naming it, so the process exits rather than run on an old schema.
 */
export async function prepareSchema(
  databaseUrl: string,
  migrateAtBoot: boolean,
  log: (line: string) => void,
  opts: MigrateOptions = {},
): Promise<void> {
  if (migrateAtBoot) {
    await migrate(databaseUrl, log, opts);
    return;
  }
  const pending = await pendingMigrations(databaseUrl, opts);
  if (pending.length === 0) {
    log('schema is up to date (MIGRATE_AT_BOOT=0: not migrating at start)');
    return;
  }
  const what =
    pending.length === 1
      ? `migration ${pending[0]} is`
      : `${pending.length} migrations (${pending[0]} to ${pending[pending.length - 1]}) are`;
  throw new MigrationsPending(
    `refusing to start: ${what} not applied to this database, and MIGRATE_AT_BOOT=0 leaves migrating to ` +
      '`npm run migrate` (the migrate Job on Kubernetes): run it, then start this again',
  );
}

/**
 * Applies every migration not yet recorded in `schema_migrations`, in name order, each in its own
 * transaction, recording its checksum. Before applying anything it checks the applied ones: an
 * applied file that changed, or that is gone, throws `MigrationRefused` and nothing is written (the
 * API, the worker, `npm run migrate` and `npm start` all refuse to start). Rows recorded before
 * checksums were kept adopt the file's current checksum once. Safe to run from several processes
 * at once (an advisory lock). Returns the versions it applied.
 */
export async function migrate(
  databaseUrl: string,
  log: (line: string) => void = () => {},
  opts: MigrateOptions = {},
): Promise<string[]> {
  const dir = opts.dir ?? MIGRATIONS_DIR;
  return connected(databaseUrl, async (client) => {
    const applied: string[] = [];
    try {
      await client.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK]);
      await client.query(
        'CREATE TABLE IF NOT EXISTS schema_migrations (version text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())',
      );
      // A table made by the runner before checksums were kept gains the column on the fly.
      await client.query('ALTER TABLE schema_migrations ADD COLUMN IF NOT EXISTS checksum text');
      const { recorded, files } = await readChecked(client, dir);

      for (const f of files) {
        if (!recorded.has(f.version) || recorded.get(f.version) !== null) continue;
        await client.query('UPDATE schema_migrations SET checksum = $2 WHERE version = $1 AND checksum IS NULL', [
          f.version,
          f.checksum,
        ]);
        log(`recorded the checksum of migration ${f.version} (applied before checksums were kept)`);
      }

      for (const f of files) {
        if (recorded.has(f.version)) continue;
        await applyOne(client, f, opts, log);
        applied.push(f.version);
        log(`applied migration ${f.version}`);
      }
    } finally {
      await client.query('SELECT pg_advisory_unlock($1)', [MIGRATION_LOCK]).catch(() => {});
    }
    return applied;
  });
}

/**
 * One migration in its own transaction. Its statements wait at most `lockTimeoutMs` for a table's
 * lock: on a live database a migration queued behind a long query (a report, `reconcile`) would
 * otherwise hold every hold and sale queued behind itself. It gives up, waits as long, and tries
 * again, `lockTries` times, then fails naming the lock.
 */
async function applyOne(
  client: pg.Client,
  f: MigrationFile,
  opts: MigrateOptions,
  log: (line: string) => void,
): Promise<void> {
  const timeoutMs = opts.lockTimeoutMs ?? 5_000;
  const tries = opts.lockTries ?? 6;
  for (let attempt = 1; ; attempt++) {
    await client.query('BEGIN');
    try {
      await client.query(`SET LOCAL lock_timeout = ${Math.max(1, Math.round(timeoutMs))}`);
      await client.query(f.sql);
      await client.query('INSERT INTO schema_migrations (version, checksum) VALUES ($1, $2)', [f.version, f.checksum]);
      await client.query('COMMIT');
      return;
    } catch (err) {
      await client.query('ROLLBACK');
      const lockHeld = (err as { code?: string }).code === LOCK_NOT_AVAILABLE;
      if (lockHeld && attempt < tries) {
        log(
          `migration ${f.version} waited ${timeoutMs} ms for a table lock another session holds: try ${attempt + 1} of ${tries} soon`,
        );
        await new Promise((r) => setTimeout(r, timeoutMs));
        continue;
      }
      const why = lockHeld
        ? `another session held a lock on a table it changes through ${tries} tries of ${timeoutMs} ms (a long query or transaction: see pg_stat_activity), and nothing was changed`
        : (err as Error).message;
      throw new Error(`migration ${f.file} failed: ${why}`, { cause: err });
    }
  }
}
