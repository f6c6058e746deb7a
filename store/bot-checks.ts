import type { Db } from './db';

// Spent bot-check solutions (migration 015): a solved ALTCHA challenge is good once across every API
// process, so spending it is one row in Postgres keyed by the challenge's signature, not a memory.

export type Spend = 'spent' | 'reused';

/**
 * Spends the solution of the challenge signed `signature` for `spentBy` (a purchase id, or a join's
 * buyer and SKU): `spent` the first time, and again for the same `spentBy` (the same request retried
 * with the same solution); `reused` when something else spent it. The insert decides: concurrent
 * spends on any number of processes let exactly one through. The row is kept until the challenge expires.
 */
export async function spendSolution(db: Db, signature: string, spentBy: string, expiresAt: Date): Promise<Spend> {
  const inserted = await db.query(
    `INSERT INTO bot_check_solutions (signature, spent_by, expires_at) VALUES ($1, $2, $3)
     ON CONFLICT (signature) DO NOTHING`,
    [signature, spentBy, expiresAt],
  );
  if (inserted.rowCount === 1) return 'spent';
  // A statement of its own: its snapshot sees the row a concurrent spend committed while the insert waited.
  const { rows } = await db.query<{ spent_by: string }>(
    'SELECT spent_by FROM bot_check_solutions WHERE signature = $1',
    [signature],
  );
  return rows[0]?.spent_by === spentBy ? 'spent' : 'reused';
}

/**
 * Forgets the solutions whose challenge expired more than `marginSeconds` ago (an expired challenge is
 * refused before its row is looked at, so its row is no longer needed). Returns how many went.
 */
export async function purgeSpentSolutions(db: Db, marginSeconds = 60): Promise<number> {
  const { rowCount } = await db.query(
    'DELETE FROM bot_check_solutions WHERE expires_at < now() - make_interval(secs => $1)',
    [marginSeconds],
  );
  return rowCount ?? 0;
}

/** How many spent solutions are kept (tests, metrics). */
export async function countSpentSolutions(db: Db): Promise<number> {
  const { rows } = await db.query<{ n: number }>('SELECT count(*)::int AS n FROM bot_check_solutions');
  return rows[0].n;
}
