import { isHttpUrl, type Reader } from './reader';
import { loadTemporalSettings, type TemporalSettings } from './temporal';

// What the loaders of config/index.ts share: Postgres and Temporal, the pools' timeouts, the
// public URL and what a service does at start.

/** What every process that talks to Postgres and Temporal needs. */
export interface CommonConfig {
  databaseUrl: string;
  temporalAddress: string;
  temporalNamespace: string;
  /** Address, namespace, TLS and API key (config/temporal.ts: a TOML profile and TEMPORAL_* variables). */
  temporal: TemporalSettings;
  taskQueue: string;
}

/** What the API and the worker do at start besides their configuration. */
export interface ServiceStart {
  /** MIGRATE_AT_BOOT: apply the missing migrations at start (true), or only check that none is missing. */
  migrateAtBoot: boolean;
}

/** How much longer than `statement_timeout` a pool's client waits for an answer (the server cancels first). */
export const QUERY_TIMEOUT_MARGIN_MS = 1_000;

/** Timeouts of a Postgres pool (config/clients.ts `createPool`). */
export interface PoolTimeouts {
  /** How long a query waits for a connection (a free one of the pool, or a new one) before failing. */
  connectTimeoutMs: number;
  /** Postgres cancels a statement that runs longer (`statement_timeout`); the client gives up soon after. */
  statementTimeoutMs: number;
  /** A connection idle in the pool this long is closed. */
  idleTimeoutMs: number;
}

export function temporal(r: Reader): Omit<CommonConfig, 'databaseUrl'> {
  const settings = loadTemporalSettings(r.env, r.problems);
  return {
    temporalAddress: settings.address,
    temporalNamespace: settings.namespace,
    temporal: settings,
    taskQueue: r.text('TASK_QUEUE'),
  };
}

/** PG_CONNECT_TIMEOUT_MS, PG_STATEMENT_TIMEOUT_MS, PG_IDLE_TIMEOUT_MS, with this process's defaults. */
export function poolTimeouts(r: Reader): PoolTimeouts {
  return {
    connectTimeoutMs: r.int('PG_CONNECT_TIMEOUT_MS'),
    statementTimeoutMs: r.int('PG_STATEMENT_TIMEOUT_MS'),
    idleTimeoutMs: r.int('PG_IDLE_TIMEOUT_MS'),
  };
}

/** PUBLIC_URL: where buyers reach the API's pages; an http(s) origin, default this machine's PORT. */
export function publicUrl(r: Reader): string {
  const url = r.text('PUBLIC_URL', `http://127.0.0.1:${r.env.PORT || 3000}`).replace(/\/$/, '');
  if (!isHttpUrl(url, /^https?:\/\/[^/?#]+(?:\/[^?#]*)?$/))
    r.problems.push(`PUBLIC_URL must be an http(s) URL, got "${url}"`);
  return url;
}

export function common(r: Reader): CommonConfig {
  return { databaseUrl: r.postgresUrl('DATABASE_URL', 'the Postgres holding stock and purchases'), ...temporal(r) };
}

/** MIGRATE_AT_BOOT: `1` (the table's default) or `0`. */
export function serviceStart(r: Reader): ServiceStart {
  const raw = r.text('MIGRATE_AT_BOOT');
  if (raw !== '0' && raw !== '1') r.problems.push(`MIGRATE_AT_BOOT must be 0 or 1, got "${raw}"`);
  return { migrateAtBoot: raw !== '0' };
}
