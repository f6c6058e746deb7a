// What a drop leaves in Postgres (issue 31, item 2: sizing Postgres and a self-hosted Temporal): the
// WAL it wrote, split by database where pg_stat_statements is loaded (the cluster loads it), and the
// rows and bytes each table of the app's database and of the Temporal server's two gained. Read before
// and after a drop on the same server (`npm run drill -- --cluster`); rows are counted, not taken from
// the statistics, which a pooled backend may not have flushed yet.
import pg from 'pg';

/** The Temporal server's databases beside the app's (dev/temporal-server.ts). */
export const TEMPORAL_DATABASES = ['temporal', 'temporal_visibility'] as const;

export interface TableSize {
  rows: number;
  bytes: number;
}

export interface DbSnapshot {
  /** pg_current_wal_lsn(), as text. */
  walLsn: string;
  /** WAL bytes written by statements, by database (pg_stat_statements); null where it is not loaded. */
  statementWal: Record<string, number> | null;
  /** `database.table` → rows and total size (table, indexes, TOAST). */
  tables: Record<string, TableSize>;
  /** Backends connected, by database (the server's own processes left out). */
  connections: Record<string, number>;
}

export interface DbGrowth {
  walBytes: number;
  statementWal: Record<string, number> | null;
  /** Per database: rows and bytes gained, and the tables that gained most (bytes first). */
  databases: Record<string, TableSize & { tables: Record<string, TableSize> }>;
}

function urlOf(databaseUrl: string, database: string): string {
  const url = new URL(databaseUrl);
  url.pathname = `/${database}`;
  return url.toString();
}

async function withClient<T>(url: string, use: (c: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await use(client);
  } finally {
    await client.end().catch(() => {});
  }
}

async function tablesOf(client: pg.Client, database: string): Promise<Record<string, TableSize>> {
  const { rows } = await client.query<{ schema: string; name: string; bytes: string }>(
    `SELECT schemaname AS schema, relname AS name, pg_total_relation_size(relid)::text AS bytes
       FROM pg_stat_user_tables WHERE schemaname NOT IN ('pg_catalog', 'information_schema')`,
  );
  const out: Record<string, TableSize> = {};
  for (const t of rows) {
    const ident = `${client.escapeIdentifier(t.schema)}.${client.escapeIdentifier(t.name)}`;
    const counted = await client.query<{ n: string }>(`SELECT count(*)::text AS n FROM ${ident}`);
    out[`${database}.${t.name}`] = { rows: Number(counted.rows[0].n), bytes: Number(t.bytes) };
  }
  return out;
}

/** Statement WAL by database, or null when pg_stat_statements is not in shared_preload_libraries. */
async function statementWal(client: pg.Client): Promise<Record<string, number> | null> {
  try {
    await client.query('CREATE EXTENSION IF NOT EXISTS pg_stat_statements');
    const { rows } = await client.query<{ db: string; wal: string }>(
      `SELECT d.datname AS db, sum(s.wal_bytes)::text AS wal
         FROM pg_stat_statements s JOIN pg_database d ON d.oid = s.dbid GROUP BY d.datname`,
    );
    return Object.fromEntries(rows.map((r) => [r.db, Number(r.wal)]));
  } catch {
    return null;
  }
}

/** Backends by database, now. */
export async function connectionsNow(databaseUrl: string): Promise<Record<string, number>> {
  return withClient(databaseUrl, async (c) => {
    const { rows } = await c.query<{ db: string; n: string }>(
      `SELECT datname AS db, count(*)::text AS n FROM pg_stat_activity
        WHERE backend_type = 'client backend' AND datname IS NOT NULL GROUP BY datname`,
    );
    return Object.fromEntries(rows.map((r) => [r.db, Number(r.n)]));
  });
}

/** The app's database (the URL's) and the Temporal server's on the same server, now. */
export async function dbSnapshot(databaseUrl: string): Promise<DbSnapshot> {
  const app = new URL(databaseUrl).pathname.slice(1);
  const { walLsn, wal, appTables } = await withClient(databaseUrl, async (c) => ({
    walLsn: (await c.query<{ lsn: string }>('SELECT pg_current_wal_lsn()::text AS lsn')).rows[0].lsn,
    wal: await statementWal(c),
    appTables: await tablesOf(c, app),
  }));
  const tables = { ...appTables };
  for (const db of TEMPORAL_DATABASES) {
    Object.assign(tables, await withClient(urlOf(databaseUrl, db), (c) => tablesOf(c, db)).catch(() => ({})));
  }
  return { walLsn, statementWal: wal, tables, connections: await connectionsNow(databaseUrl) };
}

/** Bytes between two LSNs (`16/B374D848`: the high and low 32 bits in hex). */
export function lsnBytes(lsn: string): bigint {
  const [hi, lo] = lsn.split('/');
  return (BigInt(`0x${hi}`) << 32n) + BigInt(`0x${lo}`);
}

export function dbGrowth(before: DbSnapshot, after: DbSnapshot): DbGrowth {
  const databases: DbGrowth['databases'] = {};
  for (const [key, now] of Object.entries(after.tables)) {
    const was = before.tables[key] ?? { rows: 0, bytes: 0 };
    const gained = { rows: now.rows - was.rows, bytes: now.bytes - was.bytes };
    if (gained.rows === 0 && gained.bytes === 0) continue;
    const [db, table] = key.split('.');
    const row = (databases[db] ??= { rows: 0, bytes: 0, tables: {} });
    row.rows += gained.rows;
    row.bytes += gained.bytes;
    row.tables[table] = gained;
  }
  const wal =
    before.statementWal && after.statementWal
      ? Object.fromEntries(
          Object.entries(after.statementWal).map(([db, n]) => [db, n - (before.statementWal![db] ?? 0)]),
        )
      : null;
  return { walBytes: Number(lsnBytes(after.walLsn) - lsnBytes(before.walLsn)), statementWal: wal, databases };
}
