import type { Client } from '@temporalio/client';
import type pg from 'pg';

// Counts what the API writes, in this process only (other test files share the Postgres): rows
// changed by committed statements on the pool's clients, and calls to Temporal that start or
// signal a workflow. A refused request must leave both counts as they were. (`countStatements`
// counts reads too, for tests of what a page costs the database.)

/** Statements that call a writing SQL function: their command tag is SELECT. */
const WRITING_FUNCTIONS = /\b(take_holds_batch|take_stock|reclaim_expired|apply_takes)\s*\(/i;

interface TxState {
  inTx: boolean;
  pending: number;
}

type Callback = (err: Error | null, res?: pg.QueryResult) => void;

export interface WriteCounter {
  /** Rows written by committed statements, plus Temporal calls that start or signal workflows. */
  count(): number;
  /** What was counted, for a failure message. */
  last(): string[];
}

/**
 * Calls `seen` after every statement that succeeds on `pool`'s clients (as handed out, wrapped in
 * place: pool.query() goes through connect too), with the client it ran on.
 */
export function observeStatements(
  pool: pg.Pool,
  seen: (client: pg.PoolClient, sql: string, res: pg.QueryResult | undefined) => void,
): void {
  const wrapped = new WeakSet<pg.PoolClient>();
  const wrap = (client: pg.PoolClient) => {
    if (wrapped.has(client)) return;
    wrapped.add(client);
    const query = client.query.bind(client) as (...args: unknown[]) => unknown;
    (client as { query: unknown }).query = (...args: unknown[]) => {
      const first = args[0] as string | { text?: string; submit?: unknown };
      if (typeof first === 'object' && first && 'submit' in first) return query(...args);
      const sql = typeof first === 'string' ? first : (first?.text ?? '');
      const cbAt = args.findIndex((a) => typeof a === 'function');
      if (cbAt >= 0) {
        const cb = args[cbAt] as Callback;
        args[cbAt] = (err: Error | null, res?: pg.QueryResult) => {
          if (!err) seen(client, sql, res);
          cb(err, res);
        };
        return query(...args);
      }
      return (query(...args) as Promise<pg.QueryResult>).then((res) => {
        seen(client, sql, res);
        return res;
      });
    };
  };
  const connect = pool.connect.bind(pool) as (cb?: unknown) => unknown;
  (pool as { connect: unknown }).connect = (cb?: (err: Error | undefined, c: pg.PoolClient, done: unknown) => void) => {
    if (typeof cb === 'function') {
      return connect((err: Error | undefined, c: pg.PoolClient, done: unknown) => {
        if (c) wrap(c);
        cb(err, c, done);
      });
    }
    return (connect() as Promise<pg.PoolClient>).then((c) => {
      wrap(c);
      return c;
    });
  };
}

/** Counts the statements run on `pool` whose text matches `pattern` (from now on). */
export function countStatements(pool: pg.Pool, pattern: RegExp): { count(): number } {
  let n = 0;
  observeStatements(pool, (_client, sql) => {
    if (pattern.test(sql)) n++;
  });
  return { count: () => n };
}

/** Wraps `pool` (its clients, as handed out) and `temporal.workflow` in place. Call once per pool. */
export function countWrites(pool: pg.Pool, temporal: Client): WriteCounter {
  let committed = 0;
  let temporalCalls = 0;
  const log: string[] = [];
  const states = new WeakMap<pg.PoolClient, TxState>();

  const note = (client: pg.PoolClient, sql: string, res: pg.QueryResult | undefined) => {
    let state = states.get(client);
    if (!state) states.set(client, (state = { inTx: false, pending: 0 }));
    if (/^\s*(BEGIN|START TRANSACTION)\b/i.test(sql)) Object.assign(state, { inTx: true, pending: 0 });
    else if (/^\s*COMMIT\b/i.test(sql)) {
      committed += state.pending;
      Object.assign(state, { inTx: false, pending: 0 });
    } else if (/^\s*ROLLBACK\b/i.test(sql)) Object.assign(state, { inTx: false, pending: 0 });
    else {
      const rows = ['INSERT', 'UPDATE', 'DELETE', 'MERGE'].includes(res?.command ?? '') ? (res?.rowCount ?? 0) : 0;
      const n = rows + (WRITING_FUNCTIONS.test(sql) ? 1 : 0);
      if (n === 0) return;
      log.push(sql.replace(/\s+/g, ' ').slice(0, 120));
      if (log.length > 20) log.shift();
      if (state.inTx) state.pending += n;
      else committed += n;
    }
  };
  observeStatements(pool, note);

  const counted = <T extends object>(target: T, methods: string[], what: string): T => {
    for (const m of methods) {
      const fn = (target as Record<string, unknown>)[m];
      if (typeof fn !== 'function') continue;
      (target as Record<string, unknown>)[m] = (...args: unknown[]) => {
        temporalCalls++;
        log.push(`temporal ${what}.${m}`);
        return (fn as (...a: unknown[]) => unknown).apply(target, args);
      };
    }
    return target;
  };
  const wf = temporal.workflow;
  counted(wf, ['start', 'execute', 'signalWithStart', 'executeUpdateWithStart', 'startUpdateWithStart'], 'workflow');
  const getHandle = wf.getHandle.bind(wf);
  (wf as { getHandle: unknown }).getHandle = (...args: Parameters<typeof wf.getHandle>) =>
    counted(getHandle(...args), ['signal', 'executeUpdate', 'startUpdate', 'cancel', 'terminate'], 'handle');

  return { count: () => committed + temporalCalls, last: () => [...log] };
}
