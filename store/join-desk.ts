import { PG, pgCode, type Db } from './db';
import { joinRoom, type TicketRecord } from './room';

/** Statements a batch is tried in before it falls back to one statement per join. */
const BATCH_ATTEMPTS = 3;

interface Waiting {
  buyerId: string;
  ticketId: string;
  done: (t: Promise<TicketRecord | null>) => void;
}

/**
 * Joins to a waiting room, batched per SKU in each API process: a join takes the next place from the
 * room's row, so one statement per join would queue on that row's lock for a commit each. While a
 * batch's statement runs, new joins wait, and the next statement places them all (one UPDATE of the
 * room row, one multi-row INSERT), in arrival order, and finds the tickets of buyers who joined
 * before: one round trip per batch, none per join. A batch that meets a ticket another process wrote
 * meanwhile (the primary key) falls back to one statement per join, which finds that ticket.
 */
export class JoinDesk {
  private readonly queues = new Map<string, { waiting: Waiting[]; running: boolean }>();

  constructor(private readonly db: Db) {}

  /** The buyer's ticket for `sku` (`created` when new, with `ticketId`); null when the SKU has no room. */
  async join(sku: string, buyerId: string, ticketId: string): Promise<TicketRecord | null> {
    let q = this.queues.get(sku);
    if (!q) this.queues.set(sku, (q = { waiting: [], running: false }));
    const answer = new Promise<TicketRecord | null>((resolve, reject) =>
      q.waiting.push({ buyerId, ticketId, done: (t) => void t.then(resolve, reject) }),
    );
    if (!q.running) void this.drain(sku, q);
    return answer;
  }

  private async drain(sku: string, q: { waiting: Waiting[]; running: boolean }): Promise<void> {
    q.running = true;
    try {
      while (q.waiting.length) {
        const batch = q.waiting.splice(0);
        // The same buyer twice in one batch (two tabs): one place, both answered with it.
        const first = new Map<string, Waiting>();
        for (const w of batch) if (!first.has(w.buyerId)) first.set(w.buyerId, w);
        const placed = this.place(sku, [...first.values()]);
        for (const w of batch) {
          w.done(
            placed.then((rows) => {
              const row = rows.get(w.buyerId);
              // None: the SKU has no room (the statement placed nobody and found nobody).
              return row ? { ...row, created: row.ticketId === w.ticketId } : null;
            }),
          );
        }
        await placed.catch(() => {});
      }
    } finally {
      q.running = false;
      if (q.waiting.length === 0) this.queues.delete(sku);
    }
  }

  /**
   * One statement for the batch. A buyer another process placed meanwhile fails it on the primary
   * key (nothing of it is written): the statement again finds that ticket. Only a batch that keeps
   * meeting such buyers falls back to one statement per join; any other failure fails the batch (a
   * statement per join would only pile round trips on a database that already failed one).
   */
  private async place(sku: string, joins: Waiting[]): Promise<Map<string, TicketRecord>> {
    for (let attempt = 1; attempt <= BATCH_ATTEMPTS; attempt++) {
      try {
        return await placeBatch(this.db, sku, joins);
      } catch (err) {
        if (pgCode(err) !== PG.uniqueViolation) throw err;
      }
    }
    const out = new Map<string, TicketRecord>();
    for (const w of joins) {
      const t = await joinRoom(this.db, sku, w.buyerId, w.ticketId);
      if (t) out.set(w.buyerId, t);
    }
    return out;
  }
}

/**
 * Places the batch's new buyers and finds the tickets of those who joined before, in one statement.
 * The room's row is locked (and `next_place` moved) only when someone is new: a crowd joining again
 * (a page reloaded) writes nothing.
 */
async function placeBatch(db: Db, sku: string, joins: Waiting[]): Promise<Map<string, TicketRecord>> {
  const { rows } = await db.query<{ buyer_id: string; ticket_id: string; place: string | null }>(
    `WITH input AS (SELECT b, tk, ord FROM unnest($2::text[], $3::text[]) WITH ORDINALITY AS i(b, tk, ord)),
          known AS (SELECT t.buyer_id, t.ticket_id, t.place FROM room_tickets t
                     WHERE t.sku = $1 AND t.buyer_id = ANY($2::text[])),
          fresh AS (SELECT b, tk, row_number() OVER (ORDER BY ord) AS rn FROM input
                     WHERE NOT EXISTS (SELECT 1 FROM known k WHERE k.buyer_id = input.b)),
          n AS (SELECT count(*)::bigint AS n FROM fresh),
          r AS (UPDATE rooms SET next_place = next_place + CASE WHEN shuffled THEN (SELECT n FROM n) ELSE 0 END
                 WHERE sku = $1 AND (SELECT n FROM n) > 0 RETURNING shuffled, next_place),
          placed AS (INSERT INTO room_tickets (sku, buyer_id, ticket_id, place)
                     SELECT $1, f.b, f.tk, CASE WHEN r.shuffled THEN r.next_place - (SELECT n FROM n) + f.rn END
                       FROM fresh f CROSS JOIN r
                     RETURNING buyer_id, ticket_id, place)
     SELECT buyer_id, ticket_id, place FROM placed
     UNION ALL SELECT buyer_id, ticket_id, place FROM known`,
    [sku, joins.map((j) => j.buyerId), joins.map((j) => j.ticketId)],
  );
  return new Map(
    rows.map((r) => [
      r.buyer_id,
      {
        ticketId: r.ticket_id,
        sku,
        buyerId: r.buyer_id,
        place: r.place === null ? null : Number(r.place),
        created: true,
      },
    ]),
  );
}
