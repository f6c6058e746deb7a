import fs from 'node:fs';
import path from 'node:path';
import { migrate } from '../store/migrate';
import { startPostgres } from './postgres';
import { startTemporal, waitForTemporal } from './temporal';
import { seconds, type Log } from './proc';

export interface Stack {
  databaseUrl: string;
  temporalAddress: string;
  temporalNamespace: string;
  /** Only for a Temporal dev server started here. */
  temporalUiUrl?: string;
  /** Stops what was started here, Temporal first, then Postgres; never throws. */
  stop(): Promise<void>;
}

export interface StartStackOptions {
  /**
   * Holds `postgres-<major>/` (the cluster), `temporal.db` and `postgres-port` (the port Postgres had,
   * reused when free) when persistent, and both servers' logs.
   */
  dataDir: string;
  /** Keep Temporal's state in `temporal.db` across runs; otherwise it lives in memory. */
  persistent: boolean;
  log: Log;
  temporal?: { port?: number; uiPort?: number };
  postgres?: { port?: number };
  /** Reads DATABASE_URL, TEMPORAL_ADDRESS and TEMPORAL_NAMESPACE; defaults to process.env. */
  env?: NodeJS.ProcessEnv;
  /** Aborting stops whatever has started and rejects (Ctrl-C during start-up). */
  signal?: AbortSignal;
}

const EXTERNAL_TEMPORAL_TIMEOUT_MS = 30_000;

/**
 * Brings up Postgres (migrated) and a Temporal dev server side by side, or takes the external ones
 * named by DATABASE_URL and TEMPORAL_ADDRESS. If any part fails, the parts already up are stopped.
 */
export async function startStack(opts: StartStackOptions): Promise<Stack> {
  const env = opts.env ?? process.env;
  const dataDir = path.resolve(opts.dataDir);
  fs.mkdirSync(dataDir, { recursive: true });
  const prefixed =
    (name: string): Log =>
    (line) =>
      opts.log(`[${name}] ${line}`);
  const stoppers: Array<{ name: string; stop: () => Promise<void> }> = [];
  // One part failing aborts the other, so a broken Postgres does not wait for a Temporal CLI build.
  const inner = new AbortController();
  const abortInner = (): void => inner.abort(opts.signal?.reason ?? new Error('aborted'));
  if (opts.signal?.aborted) abortInner();
  opts.signal?.addEventListener('abort', abortInner, { once: true });
  let firstFailure: Error | undefined;
  const failFast = (err: Error): never => {
    if (!firstFailure) {
      firstFailure = err;
      inner.abort(err);
    }
    throw err;
  };

  const database = (async (): Promise<string> => {
    const log = prefixed('postgres');
    let url = env.DATABASE_URL;
    if (url) {
      log(`using DATABASE_URL (${redact(url)})`);
    } else {
      const server = await startPostgres({
        dataDir: path.join(dataDir, 'postgres'),
        port: opts.postgres?.port,
        ...(opts.persistent ? { portFile: path.join(dataDir, 'postgres-port') } : {}),
        log,
        logFile: path.join(dataDir, 'postgres.log'),
        signal: inner.signal,
      });
      stoppers.push({ name: 'postgres', stop: () => server.stop() });
      url = server.url;
    }
    const started = Date.now();
    const applied = await migrate(url, log);
    log(applied.length ? `${applied.length} migration(s) applied in ${seconds(started)}` : 'schema is up to date');
    return url;
  })().catch(failFast);

  const temporal = (async (): Promise<{ address: string; namespace: string; uiUrl?: string }> => {
    const log = prefixed('temporal');
    const namespace = env.TEMPORAL_NAMESPACE || 'default';
    const address = env.TEMPORAL_ADDRESS;
    if (address) {
      log(`using TEMPORAL_ADDRESS ${address} (namespace ${namespace})`);
      await waitForTemporal({ address, namespace, timeoutMs: EXTERNAL_TEMPORAL_TIMEOUT_MS, signal: inner.signal });
      return { address, namespace };
    }
    const server = await startTemporal({
      dbFile: opts.persistent ? path.join(dataDir, 'temporal.db') : undefined,
      port: opts.temporal?.port,
      uiPort: opts.temporal?.uiPort,
      namespace,
      log,
      logFile: path.join(dataDir, 'temporal.log'),
      signal: inner.signal,
    });
    stoppers.push({ name: 'temporal', stop: () => server.stop() });
    return { address: server.address, namespace: server.namespace, uiUrl: server.uiUrl };
  })().catch(failFast);

  const stop = async (): Promise<void> => {
    // Reverse of start-up order (Postgres counts as first, both start together); each one at most once.
    const order = [...stoppers].sort((a, b) => (a.name === 'temporal' ? -1 : b.name === 'temporal' ? 1 : 0));
    stoppers.length = 0;
    for (const { name, stop: stopOne } of order) {
      try {
        await stopOne();
        opts.log(`[${name}] stopped`);
      } catch (err) {
        opts.log(`[${name}] did not stop cleanly: ${(err as Error).message}`);
      }
    }
  };

  const [db, tp] = await Promise.allSettled([database, temporal]);
  opts.signal?.removeEventListener('abort', abortInner);
  if (db.status === 'rejected' || tp.status === 'rejected') {
    await stop();
    throw firstFailure ?? new Error('the stack did not start');
  }
  return {
    databaseUrl: db.value,
    temporalAddress: tp.value.address,
    temporalNamespace: tp.value.namespace,
    temporalUiUrl: tp.value.uiUrl,
    stop,
  };
}

function redact(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    return u.toString();
  } catch {
    return 'unparsable URL';
  }
}
