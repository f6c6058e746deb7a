import type pg from 'pg';

export type Db = pg.Pool;
export type Tx = pg.PoolClient;
/** Anything a query can run on: the pool, a pooled connection, or a client of its own (the room's admitter). */
export type Queryable = Db | Tx | pg.Client;

/** Runs `fn` in one transaction on a pooled connection; rolls back on any throw. */
export async function withTx<T>(db: Db, fn: (tx: Tx) => Promise<T>): Promise<T> {
  const tx = await db.connect();
  let broken: Error | undefined;
  // A checked-out connection is no longer watched by the pool: one that Postgres ends between two
  // statements (a restart) would emit 'error' with no listener and take the whole process down.
  // Its statements fail instead, and it is discarded on release.
  const onError = (err: Error) => (broken = err);
  tx.on('error', onError);
  try {
    await tx.query('BEGIN');
    const result = await fn(tx);
    await tx.query('COMMIT');
    return result;
  } catch (err) {
    // A connection whose rollback fails too (a timed-out or dead one) is discarded, not pooled again.
    await tx.query('ROLLBACK').catch((rollbackErr: Error) => (broken = rollbackErr));
    throw err;
  } finally {
    tx.removeListener('error', onError);
    tx.release(broken);
  }
}

/** Postgres error codes this code branches on. */
export const PG = {
  uniqueViolation: '23505',
  checkViolation: '23514',
  serializationFailure: '40001',
  deadlockDetected: '40P01',
} as const;

export function pgCode(err: unknown): string | undefined {
  return typeof err === 'object' && err !== null && 'code' in err ? String(err.code) : undefined;
}

export function constraintOf(err: unknown): string | undefined {
  return typeof err === 'object' && err !== null && 'constraint' in err ? String(err.constraint) : undefined;
}

/** A round trip to Postgres (readiness probes). */
export async function ping(db: Db): Promise<void> {
  await db.query('SELECT 1');
}
