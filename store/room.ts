import { pgCode, PG, type Db, type Tx } from './db';
import { inLine, waitingInLine } from './checkout-line';

// The waiting room's record (migration 010): rooms, tickets and the serving counter's steps. Who
// may enter is decided by the admitter (store/admitter.ts); what a poll sees is answered from a
// per-process cache of this record (store/room-cache.ts), never by a read per poll.

export type RoomState = 'open' | 'paused' | 'closed';

/** A room's settings as the catalogue takes them. */
export interface RoomSettings {
  /** Left out or null: the room follows the Stripe budget (store/admitter.ts). */
  admitPerSecond?: number | null;
  maxActive: number;
  /** How long an admitted buyer has to start a purchase; 300 when left out. */
  sessionSeconds?: number;
}

export const DEFAULT_SESSION_SECONDS = 300;
/**
 * How long after its session ended a step of the serving counter is still read into a cache. A poll
 * of a place whose step is older asks the ticket's own row how it ended (store: ticketOutcome).
 */
export const STEP_MEMORY_SECONDS = 60;

/** A buyer's ticket as recorded: `place` is null while the buyer waits in the pre-queue. */
export interface TicketRecord {
  ticketId: string;
  sku: string;
  buyerId: string;
  place: number | null;
  created: boolean;
}

/** What every API process caches of a room (one row, read every few hundred milliseconds at most). */
export interface RoomRow {
  sku: string;
  state: RoomState;
  soldOut: boolean;
  /** Null: the room follows the Stripe budget (store/admitter.ts). */
  admitPerSecond: number | null;
  maxActive: number;
  sessionSeconds: number;
  opensAt: Date | null;
  shuffled: boolean;
  prequeueSize: number;
  nextPlace: number;
  serving: number;
  /**
   * Sold out for now (the admitter's last step): every unit that can still be had is spoken for by
   * buyers inside; this many could still come back to the line. Null (or absent) otherwise.
   */
  unitsMayReturn?: number | null;
  /** While sold out for now: when the next of those units may come back (a hold's end, or its grace's). */
  nextReturnAt?: Date | null;
  /** Admitted buyers inside (not yet left), as the admitter's last step counted them; null before it stepped. */
  inside?: number | null;
  /** When the admitter last stepped the room (the rate credit's time): how fresh `inside` is. */
  steppedAt?: Date;
  /**
   * When the line last moved as the admitter's steps saw it (a buyer let in, or nobody waiting): what
   * a stall is measured from. Null (or absent) before the admitter stepped the room.
   */
  lineMovedAt?: Date | null;
}

/** One step of the serving counter: places first..last were admitted at `admittedAt`, their sessions end at `expiresAt`. */
export interface AdmissionStep {
  firstPlace: number;
  lastPlace: number;
  admittedAt: Date;
  expiresAt: Date;
}

/** The operator's view (GET /v1/products/:sku/waiting-room). */
export interface RoomStats {
  sku: string;
  state: RoomState;
  soldOut: boolean;
  /** Tickets not admitted yet (the pre-queue included). */
  waiting: number;
  /** Tickets admitted so far. */
  admitted: number;
  /** Admitted buyers inside now: neither bought (purchase ended) nor expired. */
  active: number;
  /** Null: the room follows the Stripe budget (store/admitter.ts). */
  admitPerSecond: number | null;
  maxActive: number;
  sessionSeconds: number;
}

interface RoomDbRow {
  sku: string;
  state: RoomState;
  sold_out: boolean;
  admit_per_second: number | null;
  max_active: number;
  session_seconds: number;
  opens_at: Date | null;
  shuffled: boolean;
  prequeue_size: number;
  next_place: string;
  serving: string;
  units_may_return: number | null;
  next_return_at: Date | null;
  inside: number | null;
  credit_at: Date;
  line_moved_at: Date | null;
}

// bigint counters come back as strings; a room never holds 2^53 tickets.
const toRoom = (r: RoomDbRow): RoomRow => ({
  sku: r.sku,
  state: r.state,
  soldOut: r.sold_out,
  admitPerSecond: r.admit_per_second,
  maxActive: r.max_active,
  sessionSeconds: r.session_seconds,
  opensAt: r.opens_at,
  shuffled: r.shuffled,
  prequeueSize: r.prequeue_size,
  nextPlace: Number(r.next_place),
  serving: Number(r.serving),
  unitsMayReturn: r.units_may_return,
  nextReturnAt: r.next_return_at,
  inside: r.inside,
  steppedAt: r.credit_at,
  lineMovedAt: r.line_moved_at,
});

/** Creates the room of a new product, in the product's transaction. A room without opensAt has no pre-queue. */
export async function createRoom(tx: Tx, sku: string, s: RoomSettings, opensAt: Date | null): Promise<void> {
  await tx.query(
    `INSERT INTO rooms (sku, admit_per_second, max_active, session_seconds, opens_at, shuffled)
     VALUES ($1, $2, $3, $4, $5, $5::timestamptz IS NULL)`,
    [sku, s.admitPerSecond ?? null, s.maxActive, s.sessionSeconds ?? DEFAULT_SESSION_SECONDS, opensAt],
  );
}

export async function getRoom(db: Db | Tx, sku: string): Promise<RoomRow | null> {
  const { rows } = await db.query<RoomDbRow>('SELECT * FROM rooms WHERE sku = $1', [sku]);
  return rows[0] ? toRoom(rows[0]) : null;
}

/**
 * A purchase `p` its turn came to nothing on: refused before it held anything (the hold step found
 * nothing free, or the session could not open and the hold went back), or recorded but never under
 * way: still `holding`, with no hold, a minute past its place in the checkout line (its saga's start
 * failed and the buyer never sent the key again, or the API stopped in between; `sagas stuck` lists
 * it, and the buyer may already buy again without a room). While the admission's session lasts, the
 * turn is the buyer's again (spent on a new purchase at once, or given back by the admitter); once it
 * is over, the turn is done and the next in line gets the place.
 */
export const CAME_TO_NOTHING_SQL = `(p.status = 'rejected' OR (p.status = 'failed' AND p.checkout_url IS NULL)
  OR (${inLine('p')} AND NOT ${waitingInLine('p')}
      AND NOT EXISTS (SELECT 1 FROM holds h WHERE h.purchase_id = p.purchase_id)))`;

/**
 * A buyer's ticket for `sku`: the one they already have, or a new one (`created`) with `ticketId`.
 * One statement: the room row's counter gives the next place once the pre-queue is shuffled (before
 * that the place stays null), and a second join of the same buyer fails the whole statement on the
 * primary key, so it takes no place. Null when the SKU has no room.
 */
export async function joinRoom(db: Db, sku: string, buyerId: string, ticketId: string): Promise<TicketRecord | null> {
  const existing = await findTicket(db, sku, buyerId);
  if (existing) return existing;
  try {
    const { rows } = await db.query<{ place: string | null }>(
      `WITH r AS (
         UPDATE rooms SET next_place = next_place + CASE WHEN shuffled THEN 1 ELSE 0 END
          WHERE sku = $1 RETURNING shuffled, next_place)
       INSERT INTO room_tickets (sku, buyer_id, ticket_id, place)
       SELECT $1, $2, $3, CASE WHEN r.shuffled THEN r.next_place END FROM r
       RETURNING place`,
      [sku, buyerId, ticketId],
    );
    if (!rows[0]) return null;
    return { ticketId, sku, buyerId, place: rows[0].place === null ? null : Number(rows[0].place), created: true };
  } catch (err) {
    // The same buyer joined at the same moment through another request: theirs is the ticket.
    if (pgCode(err) === PG.uniqueViolation) return findTicket(db, sku, buyerId);
    throw err;
  }
}

/** A buyer's ticket for `sku`, if they joined. */
export async function findTicket(db: Db, sku: string, buyerId: string): Promise<TicketRecord | null> {
  const { rows } = await db.query<{ ticket_id: string; place: string | null }>(
    'SELECT ticket_id, place FROM room_tickets WHERE sku = $1 AND buyer_id = $2',
    [sku, buyerId],
  );
  const r = rows[0];
  if (!r) return null;
  return { ticketId: r.ticket_id, sku, buyerId, place: r.place === null ? null : Number(r.place), created: false };
}

/** The room row and the serving counter's steps after `afterPlace` (what a process's cache lacks). */
export async function readRoom(
  db: Db,
  sku: string,
  afterPlace: number,
): Promise<{ room: RoomRow; steps: AdmissionStep[] } | null> {
  const room = await getRoom(db, sku);
  if (!room) return null;
  const { rows } = await db.query<{ first_place: string; last_place: string; admitted_at: Date; expires_at: Date }>(
    `SELECT first_place, last_place, admitted_at, expires_at FROM room_admissions
      WHERE sku = $1 AND last_place > $2 AND expires_at > now() - make_interval(secs => $3) ORDER BY last_place`,
    [sku, afterPlace, STEP_MEMORY_SECONDS],
  );
  const steps = rows.map((r) => ({
    firstPlace: Number(r.first_place),
    lastPlace: Number(r.last_place),
    admittedAt: r.admitted_at,
    expiresAt: r.expires_at,
  }));
  return { room, steps };
}

/** The places the opening's shuffle gave the pre-queue, by ticket id: read once per process. */
export async function prequeuePlaces(db: Db, sku: string): Promise<Map<string, number>> {
  const { rows } = await db.query<{ ticket_id: string; place: string }>(
    `SELECT ticket_id, place FROM room_tickets
      WHERE sku = $1 AND place <= (SELECT prequeue_size FROM rooms WHERE sku = $1)`,
    [sku],
  );
  return new Map(rows.map((r) => [r.ticket_id, Number(r.place)]));
}

/**
 * What an admitted ticket's turn was spent on: its purchase and that purchase's status, or nothing
 * (the session expired unused, or is still unused). Null: no such ticket.
 */
export async function ticketOutcome(
  db: Db,
  ticketId: string,
): Promise<{ purchaseId: string | null; purchaseStatus: string | null; cameToNothing: boolean } | null> {
  const { rows } = await db.query<{ purchase_id: string | null; status: string | null; nothing: boolean | null }>(
    `SELECT t.purchase_id, p.status, ${CAME_TO_NOTHING_SQL} AS nothing
       FROM room_tickets t LEFT JOIN purchases p ON p.purchase_id = t.purchase_id
      WHERE t.ticket_id = $1`,
    [ticketId],
  );
  const r = rows[0];
  return r ? { purchaseId: r.purchase_id, purchaseStatus: r.status, cameToNothing: r.nothing === true } : null;
}

/** The operator's figures of one room (SKU given) or of every room. */
export async function roomStats(db: Db, sku?: string): Promise<RoomStats[]> {
  const { rows } = await db.query<RoomDbRow & { waiting: number; admitted: number; active: number }>(
    `SELECT r.*,
            (SELECT count(*) FROM room_tickets t WHERE t.sku = r.sku AND t.admitted_at IS NULL)::int AS waiting,
            (SELECT count(*) FROM room_tickets t WHERE t.sku = r.sku AND t.admitted_at IS NOT NULL)::int AS admitted,
            (SELECT count(*) FROM room_tickets t
              WHERE t.sku = r.sku AND t.admitted_at IS NOT NULL AND t.left_at IS NULL)::int AS active
       FROM rooms r WHERE $1::text IS NULL OR r.sku = $1 ORDER BY r.sku`,
    [sku ?? null],
  );
  return rows.map((r) => {
    const room = toRoom(r);
    return {
      sku: room.sku,
      state: room.state,
      soldOut: room.soldOut,
      // A sold-out room has no line: its tickets read sold_out (until a restock and a reopening).
      waiting: room.soldOut ? 0 : r.waiting,
      admitted: r.admitted,
      active: r.active,
      admitPerSecond: room.admitPerSecond,
      maxActive: room.maxActive,
      sessionSeconds: room.sessionSeconds,
    };
  });
}

export interface RoomPatch {
  state?: RoomState;
  /** Null: from now on the room follows the Stripe budget (left out: unchanged). */
  admitPerSecond?: number | null;
  maxActive?: number;
}

/**
 * Changes a room live; the admitter reads its row every step. Opening a room again (a restock after
 * it sold out) clears `sold_out`: the admitter closes it again if nothing can be had. Null: no room.
 */
export async function patchRoom(db: Db, sku: string, p: RoomPatch): Promise<RoomRow | null> {
  const { rows } = await db.query<RoomDbRow>(
    `UPDATE rooms SET state = coalesce($2, state),
                      sold_out = CASE WHEN $2 = 'open' THEN false ELSE sold_out END,
                      admit_per_second = CASE WHEN $5 THEN NULL ELSE coalesce($3, admit_per_second) END,
                      max_active = coalesce($4, max_active)
      WHERE sku = $1 RETURNING *`,
    [sku, p.state ?? null, p.admitPerSecond ?? null, p.maxActive ?? null, p.admitPerSecond === null],
  );
  return rows[0] ? toRoom(rows[0]) : null;
}

/**
 * An admitted buyer the gate answered sold out before any purchase was recorded: their turn counts as
 * given back (as a purchase refused before its hold does, store/admitter.ts), so a unit that comes back
 * is not kept from the next in line while they may have walked away. They keep the turn for the rest
 * of the session: whichever of them buys first takes the unit.
 */
export async function giveBackUnspentTurn(db: Db, ticketId: string, sku: string, buyerId: string): Promise<void> {
  await db.query(
    `UPDATE room_tickets SET given_back_at = now()
      WHERE ticket_id = $1 AND sku = $2 AND buyer_id = $3 AND admitted_at IS NOT NULL AND left_at IS NULL
        AND purchase_id IS NULL AND given_back_at IS NULL`,
    [ticketId, sku, buyerId],
  );
}

/**
 * The condition (on `room_tickets`) that an admission may be spent on a purchase (store/open-purchase.ts):
 * the ticket is admitted, inside its session, and not yet spent on another purchase, or spent on one
 * that came to nothing (CAME_TO_NOTHING_SQL: the buyer need not wait for the admitter to give the turn
 * back). `$n` are the ticket id, SKU, buyer and purchase id parameters.
 */
export function unspentAdmissionSql(ticket: string, sku: string, buyer: string, purchase: string): string {
  return `ticket_id = ${ticket} AND sku = ${sku} AND buyer_id = ${buyer}
          AND admitted_at IS NOT NULL AND left_at IS NULL AND admission_expires_at > now()
          AND (purchase_id IS NULL OR purchase_id = ${purchase}
               OR EXISTS (SELECT 1 FROM purchases p WHERE p.purchase_id = room_tickets.purchase_id AND ${CAME_TO_NOTHING_SQL}))`;
}
