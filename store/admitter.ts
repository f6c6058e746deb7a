import pg from 'pg';
import { FINAL_STATUSES } from '../vocabulary';
import { waitingCount } from './checkout-line';
import { stockView } from './products';
import { CAME_TO_NOTHING_SQL } from './room';

/** A purchase whose delayed payment is settling (migration 019): its hold stays, its buyer is done. */
const SETTLING_SQL = "p.status = 'awaiting_payment' AND p.settling_at IS NOT NULL";

// Any fixed number other than the migrator's: the one admitter of all API processes holds it.
export const ADMITTER_LOCK = 7_402_114;
const DEFAULT_TICK_MS = 100;
/** How often a process that is not the admitter tries the lock again (the admitter's process may be gone). */
const DEFAULT_RETRY_MS = 500;
/** A step that runs longer than this is cancelled: the lock's session must not stall the room. */
const STATEMENT_TIMEOUT_MS = 5_000;
/**
 * Postgres ends the lock's session once it has been idle this long, in a transaction or not: the
 * admitter sends a statement every tick (100 ms), so only a session whose process is gone or cut off
 * goes quiet, and ending it frees the lock (and a room row it locked) for another process within
 * seconds instead of when TCP gives up on it (hours).
 */
const SESSION_IDLE_MS = 10_000;

export interface AdmitterOptions {
  tickMs?: number;
  retryMs?: number;
  /**
   * The session budget's pace (STRIPE_MAX_SESSIONS_PER_SECOND, never above the request budget): a
   * room without its own `admitPerSecond` admits at it, and never more than the checkouts already
   * waiting leave room for. Default 20, the session budget's default.
   */
  checkoutsPerSecond?: number;
  log?: (line: string) => void;
}

/**
 * The room row's `line_moved_at` after a step that let `admitted` buyers in (SQL, in an UPDATE of
 * rooms, whose right-hand sides read the row before it): now when it let someone in or nobody waits
 * (`next_place` is the last place given, `serving` the last let in), else as it was. A buyer's poll
 * measures the room's stall from it (api/queue-wait.ts): an idle spell is none.
 */
function lineMovedSql(admitted: string): string {
  return `CASE WHEN ${admitted} > 0 OR next_place <= serving + ${admitted} THEN now() ELSE line_moved_at END`;
}

/** A room that follows the budget keeps at most this many seconds of checkouts waiting for their sessions. */
const BUDGET_BACKLOG_SECONDS = 2;

/**
 * The waiting room's admitter. Every API process runs one; the one that holds a Postgres advisory
 * lock (a session lock on a connection of its own) steps every room each tick, on that connection,
 * so a process that lost its session (and with it the lock) can no longer write a step. Each step
 * is one transaction under the room row's lock: shuffle the pre-queue at the opening, let out who
 * left (session over unused, or purchase final), close the room when nothing can come back, and
 * advance the serving counter by as many as the rate credit, `max_active` and the stock allow.
 */
export class Admitter {
  private client: pg.Client | null = null;
  private leader = false;
  private timer?: NodeJS.Timeout;
  private closed = false;
  private readonly tickMs: number;
  private readonly retryMs: number;
  private readonly log: (line: string) => void;
  private readonly checkoutsPerSecond: number;

  constructor(
    private readonly databaseUrl: string,
    opts: AdmitterOptions = {},
  ) {
    this.tickMs = opts.tickMs ?? DEFAULT_TICK_MS;
    this.retryMs = opts.retryMs ?? DEFAULT_RETRY_MS;
    this.checkoutsPerSecond = opts.checkoutsPerSecond ?? 20;
    this.log = opts.log ?? (() => {});
  }

  start(): void {
    this.schedule(0);
  }

  /** True while this process holds the admitter's lock. */
  isLeader(): boolean {
    return this.leader;
  }

  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.timer);
    this.leader = false;
    // Ending the session releases the lock: another process takes over at its next try.
    await this.client?.end().catch(() => {});
    this.client = null;
  }

  private schedule(ms: number): void {
    if (this.closed) return;
    this.timer = setTimeout(() => void this.run(), ms);
    this.timer.unref();
  }

  private async run(): Promise<void> {
    try {
      if (!this.leader) await this.campaign();
      if (this.leader && this.client && !this.closed)
        await stepAllRooms(this.client, this.checkoutsPerSecond, this.log);
    } catch (err) {
      if (!this.closed) this.log(`room admitter: ${(err as Error).message}; trying again`);
      this.drop();
    }
    this.schedule(this.leader ? this.tickMs : this.retryMs);
  }

  private async campaign(): Promise<void> {
    if (!this.client) {
      // Guarded as the pools are (config/clients.ts): nothing it sends waits for an answer unbounded.
      const client = new pg.Client({
        connectionString: this.databaseUrl,
        keepAlive: true,
        connectionTimeoutMillis: STATEMENT_TIMEOUT_MS,
        statement_timeout: STATEMENT_TIMEOUT_MS,
        query_timeout: STATEMENT_TIMEOUT_MS + 1_000,
        idle_in_transaction_session_timeout: SESSION_IDLE_MS,
      });
      client.on('error', (err) => {
        this.log(`room admitter: connection lost (${err.message})`);
        if (this.client === client) this.drop();
      });
      await client.connect();
      // idle_session_timeout is Postgres 14's: an older server keeps only the one in a transaction.
      await client.query(`SET idle_session_timeout = ${SESSION_IDLE_MS}`).catch(() => {});
      // Closed while it connected: close() had no session to end, so this one must not take the lock.
      if (this.closed) {
        await client.end().catch(() => {});
        return;
      }
      this.client = client;
    }
    const { rows } = await this.client.query<{ ok: boolean }>('SELECT pg_try_advisory_lock($1) AS ok', [ADMITTER_LOCK]);
    // Closed while it asked: close() ended the session (and with it the lock) or is ending it.
    this.leader = rows[0].ok && !this.closed;
  }

  private drop(): void {
    this.leader = false;
    this.client?.end().catch(() => {});
    this.client = null;
  }
}

/**
 * One step of every room that may have work: not closed, or closed with buyers still inside. A room
 * whose step fails (a statement past its timeout, a row it cannot write) is logged and skipped until
 * the next tick: the rooms after it are stepped all the same. Only a connection that no longer
 * answers ends the round (and the lock with it).
 */
export async function stepAllRooms(
  client: pg.Client,
  checkoutsPerSecond: number,
  log: (line: string) => void = () => {},
): Promise<void> {
  const { rows } = await client.query<{ sku: string }>(
    `SELECT sku FROM rooms r WHERE state <> 'closed'
        OR EXISTS (SELECT 1 FROM room_tickets t WHERE t.sku = r.sku AND t.admitted_at IS NOT NULL AND t.left_at IS NULL)`,
  );
  for (const { sku } of rows) {
    try {
      await stepRoom(client, sku, checkoutsPerSecond);
    } catch (err) {
      // The session itself gone: nothing more can be stepped on it.
      await client.query('SELECT 1').catch(() => {
        throw err;
      });
      log(`room admitter: the step of ${sku} failed (${(err as Error).message}); the other rooms go on`);
    }
  }
}

interface LockedRoom {
  state: string;
  sold_out: boolean;
  /** Null: the room follows the Stripe budget. */
  admit_per_second: number | null;
  max_active: number;
  session_seconds: number;
  shuffled: boolean;
  not_open: boolean;
  next_place: string;
  serving: string;
  credit: number;
  elapsed: number;
}

async function stepRoom(client: pg.Client, sku: string, checkoutsPerSecond: number): Promise<void> {
  await client.query('BEGIN');
  try {
    const { rows } = await client.query<LockedRoom>(
      `SELECT state, sold_out, admit_per_second, max_active, session_seconds, shuffled, next_place, serving, credit,
              coalesce(opens_at > now(), false) AS not_open,
              greatest(0, extract(epoch FROM now() - credit_at))::float8 AS elapsed
         FROM rooms WHERE sku = $1 FOR UPDATE`,
      [sku],
    );
    const r = rows[0];
    if (r && !r.not_open) await advance(client, sku, r, checkoutsPerSecond);
    await client.query('COMMIT');
  } catch (err) {
    await client.query('ROLLBACK').catch(() => {});
    throw err;
  }
}

async function advance(client: pg.Client, sku: string, r: LockedRoom, checkoutsPerSecond: number): Promise<void> {
  if (!r.shuffled) {
    // The opening: the pre-queue (who joined before opens_at) is shuffled once into places 1..n, so
    // arriving first buys nothing. Who joined after opens_at but before this step lines up behind in
    // the order they joined, as every later join does at m+1, m+2, ... (they wait on the room row).
    // Every ticket placed here was signed without a place: prequeue_size counts them all, so the API
    // finds each one's place among the first prequeue_size (store/room.ts prequeuePlaces).
    const shuffled = await client.query(
      `WITH s AS (SELECT t.ticket_id,
                         row_number() OVER (ORDER BY t.joined_at < r.opens_at DESC,
                                                     CASE WHEN t.joined_at < r.opens_at THEN random() END,
                                                     t.joined_at, t.ticket_id) AS rn
                    FROM room_tickets t JOIN rooms r USING (sku) WHERE t.sku = $1 AND t.place IS NULL)
       UPDATE room_tickets t SET place = s.rn FROM s WHERE t.ticket_id = s.ticket_id`,
      [sku],
    );
    const n = shuffled.rowCount ?? 0;
    await client.query(
      `UPDATE rooms SET shuffled = true, prequeue_size = $2::int, next_place = $2::bigint, credit = 0, credit_at = now(),
                        line_moved_at = now()
        WHERE sku = $1`,
      [sku, n],
    );
    return;
  }
  // A turn spent on a purchase that came to nothing (refused before it held anything, or never under
  // way: CAME_TO_NOTHING_SQL) is given back while the session lasts: the buyer lost nothing by our
  // failure and may try again with a new key.
  await client.query(
    `UPDATE room_tickets t SET purchase_id = NULL, given_back_at = now()
      WHERE t.sku = $1 AND t.admitted_at IS NOT NULL AND t.left_at IS NULL AND t.purchase_id IS NOT NULL
        AND t.admission_expires_at > now()
        AND EXISTS (SELECT 1 FROM purchases p WHERE p.purchase_id = t.purchase_id AND ${CAME_TO_NOTHING_SQL})`,
    [sku],
  );
  // Who left: an admission whose session ended unused, or whose purchase reached a final status, or
  // whose delayed payment is settling (a bank debit can take days: the buyer is done with the
  // checkout). Each statement reads its own snapshot: a purchase refused between the two is not taken
  // for a finished one while its session lasts, so the next step gives that turn back.
  await client.query(
    `UPDATE room_tickets t SET left_at = now(), left_reason = CASE WHEN t.purchase_id IS NULL THEN 'expired' ELSE 'done' END
      WHERE t.sku = $1 AND t.admitted_at IS NOT NULL AND t.left_at IS NULL
        AND CASE WHEN t.purchase_id IS NULL THEN t.admission_expires_at <= now()
                 ELSE EXISTS (SELECT 1 FROM purchases p WHERE p.purchase_id = t.purchase_id
                                AND (p.status = ANY($2::text[]) OR (${SETTLING_SQL}) OR ${CAME_TO_NOTHING_SQL})
                                AND NOT (${CAME_TO_NOTHING_SQL} AND t.admission_expires_at > now())) END`,
    [sku, FINAL_STATUSES],
  );
  // Inside: every admitted buyer counts against maxActive. Against the units, a buyer with a purchase
  // counts for its quantity (the units its hold takes), one who has not bought yet for one, and one
  // whose turn was given back and who has not bought again for none: told nothing was free, they may
  // have left, and a unit that comes back goes to the next in line too (whoever buys first takes it).
  const { rows } = await client.query<{ inside: number; contending: number }>(
    `SELECT count(*)::int AS inside,
            coalesce(sum(coalesce(p.quantity, 1)) FILTER (WHERE t.purchase_id IS NOT NULL OR t.given_back_at IS NULL), 0)::int
              AS contending
       FROM room_tickets t LEFT JOIN purchases p ON p.purchase_id = t.purchase_id
      WHERE t.sku = $1 AND t.admitted_at IS NOT NULL AND t.left_at IS NULL`,
    [sku],
  );
  const { inside, contending } = rows[0];
  // Units held by settling payments, whose buyers left: not offered to the next in line (they may
  // still sell), though they can come back, so they keep the room open.
  const settlingQuery = await client.query<{ units: number }>(
    `SELECT coalesce(sum(h.quantity), 0)::int AS units
       FROM purchases p JOIN holds h ON h.purchase_id = p.purchase_id AND h.status = 'active'
       JOIN products r ON r.sku = h.sku AND h.expires_at > now() - make_interval(secs => r.hold_grace_seconds)
      WHERE p.sku = $1 AND ${SETTLING_SQL}`,
    [sku],
  );
  const settling = settlingQuery.rows[0].units;
  const stock = await stockView(client, sku);
  // Units that can still be had: free now, or held (by buyers inside) and able to come back.
  const obtainable = stock ? stock.remaining + stock.held : 0;
  if (obtainable === 0 && !r.sold_out) {
    // Sold out for good: the room closes, and every waiting ticket reads sold_out at its next poll.
    await client.query(
      `UPDATE rooms SET sold_out = true, state = 'closed', credit = 0, credit_at = now(),
                        units_may_return = NULL, next_return_at = NULL, inside = $2 WHERE sku = $1`,
      [sku, inside],
    );
    return;
  }
  // Sold out for now: every unit that can still be had is spoken for by buyers inside. The line is
  // told how many could come back, and when the next may (the polls read it from the room row).
  const forNow = !r.sold_out && obtainable - contending - settling <= 0;
  const outlook = [forNow ? obtainable : null, forNow ? (stock?.nextLapseAt ?? null) : null];
  if (r.state !== 'open' || r.sold_out) {
    await client.query(
      `UPDATE rooms SET credit = 0, credit_at = now(), units_may_return = $2, next_return_at = $3, inside = $4,
                        line_moved_at = ${lineMovedSql('0')}
        WHERE sku = $1`,
      [sku, ...outlook, inside],
    );
    return;
  }
  // The rate is a credit that grows with time, at most one second's worth (a burst after a pause).
  const rate = r.admit_per_second ?? checkoutsPerSecond;
  const credit = Math.min(r.credit + rate * r.elapsed, Math.max(1, rate));
  const serving = Number(r.serving);
  // Following the budget: what is left of it once the checkouts already waiting for a session (of
  // every room and product: the budget is the deployment's) have had theirs.
  const budgetRoom = r.admit_per_second === null ? await checkoutRoom(client, checkoutsPerSecond) : Infinity;
  const k = Math.max(
    0,
    Math.floor(
      Math.min(
        credit,
        budgetRoom,
        r.max_active - inside,
        Number(r.next_place) - serving,
        obtainable - contending - settling,
      ),
    ),
  );
  if (k > 0) {
    await client.query(
      `WITH t AS (
         UPDATE room_tickets SET admitted_at = now(), admission_expires_at = now() + make_interval(secs => $4)
          WHERE sku = $1 AND place > $2 AND place <= $2 + $3 RETURNING 1)
       INSERT INTO room_admissions (sku, first_place, last_place, admitted_at, expires_at)
       SELECT $1, $2 + 1, $2 + $3, now(), now() + make_interval(secs => $4) WHERE EXISTS (SELECT 1 FROM t)`,
      [sku, serving, k, r.session_seconds],
    );
  }
  await client.query(
    `UPDATE rooms SET serving = serving + $2, credit = $3, credit_at = now(), units_may_return = $4, next_return_at = $5,
                      inside = $6, line_moved_at = ${lineMovedSql('$2')}
      WHERE sku = $1`,
    [sku, k, credit - k, ...outlook, inside + k],
  );
}

/**
 * How many more checkouts the budget can open within BUDGET_BACKLOG_SECONDS, beside the purchases
 * waiting in the line now (store/checkout-line.ts: a stuck one must not close the room).
 */
async function checkoutRoom(client: pg.Client, checkoutsPerSecond: number): Promise<number> {
  return Math.max(0, checkoutsPerSecond * BUDGET_BACKLOG_SECONDS - (await waitingCount(client)));
}
