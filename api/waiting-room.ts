import { randomBytes } from 'node:crypto';
import type { RoomTokens } from '../config/room-tokens';
import type { Clock } from '../store/clock';
import type { Db } from '../store/db';
import { JoinDesk } from '../store/join-desk';
import { ticketOutcome } from '../store/room';
import { stepFor, type RoomCache, type RoomSnapshot } from '../store/room-cache';
import { DEFAULT_CHECKOUTS_PER_SECOND } from './checkout-pace';
import { inLine, MAX_POLL_SECONDS, nextPollSeconds, type SoldOutForNow } from './next-poll';
import { estimateWait, type WaitEstimate } from './queue-wait';

export type TicketState = 'prequeue' | 'waiting' | 'admitted' | 'sold_out' | 'expired';

/** What a buyer's poll answers (GET /v1/queue/:ticket), and what the queue page renders. */
export interface TicketView {
  /** The ticket to poll with: after the opening, a pre-queue ticket comes back re-signed with its place. */
  ticket: string;
  sku: string;
  /** Buyers ahead in line; null in the pre-queue (no places before the opening). */
  position: number | null;
  state: TicketState;
  estimatedWaitSeconds: number;
  /** The room's own state: a paused or closed room keeps its line. */
  roomState: 'open' | 'paused' | 'closed';
  /** While waiting: the room holds as many buyers as it takes, the next is let in as one finishes. */
  roomFull?: boolean;
  /** While `prequeue` or `waiting`: when to ask again (api/next-poll.ts), also sent as `Retry-After`. */
  nextPollSeconds?: number;
  /** While waiting: every unit that can still be had is spoken for by buyers inside; the place is kept. */
  soldOutForNow?: SoldOutForNow;
  opensAt?: string;
  /** Once admitted: the token POST /v1/purchases takes in `Admission-Token`, and when it ends. */
  admissionToken?: string;
  admissionExpiresAt?: string;
  /** The purchase this admission was spent on, once its session is over. */
  purchaseId?: string;
}

/** What the queue page renders: a poll's view, and a turn already spent says on what, and how it stands. */
export type TicketPageView = TicketView & { purchaseStatus?: string };

/**
 * The waiting room as the API (and the HTML pages) use it. `join` writes one ticket row; `view`
 * answers from the signed ticket and this process's cache of the serving counter, with no database
 * read in the steady state (a pre-queue ticket reads the shuffled places once per process after
 * the opening; a ticket whose session ended long ago reads its row to say how it ended).
 */
export class WaitingRoom {
  private readonly desk: JoinDesk;

  constructor(
    private readonly db: Db,
    private readonly tokens: RoomTokens,
    private readonly cache: RoomCache,
    /** Postgres's (store/clock.ts): the opening and the sessions' ends are its instants. */
    private readonly clock: Clock,
    /** The Stripe budget's pace: the admission rate of a room without its own (until one is measured). */
    private readonly checkoutsPerSecond = DEFAULT_CHECKOUTS_PER_SECOND,
    /** The longest a buyer in line is told to wait before asking again (ROOM_MAX_POLL_SECONDS). */
    private readonly maxPollSeconds = MAX_POLL_SECONDS,
  ) {
    this.desk = new JoinDesk(db);
  }

  /** Joins `buyerId` to the line of `sku`, or finds their ticket (`created: false`). Null: the SKU has no room. */
  async join(sku: string, buyerId: string): Promise<{ created: boolean; view: TicketView } | null> {
    const snapshot = await this.cache.get(sku);
    if (!snapshot) return null;
    const t = await this.desk.join(sku, buyerId, randomBytes(16).toString('base64url'));
    if (!t) return null;
    const ticket = this.tokens.signTicket(t);
    // A join reads anyway: its answer says at once whether the turn was spent.
    return { created: t.created, view: (await this.describe(ticket, true))!.view };
  }

  /** The view of a ticket; null when it is not one this service signed (forged, altered) or its room is gone. */
  async view(ticket: string): Promise<TicketView | null> {
    return (await this.describe(ticket, false))?.view ?? null;
  }

  /**
   * The view the queue page renders. Unlike a poll it reads the ticket's row while the session
   * lasts: a turn already spent on a purchase shows that purchase, not a Buy form whose admission
   * would be refused (a poll cannot tell without a read per poll, so it keeps the token). Only for
   * the ticket's own buyer (`viewerId`, the page's cookie): anyone else who has the URL sees what a
   * poll shows, not which purchase the turn became or how it ended.
   */
  async pageView(ticket: string, viewerId: string | undefined): Promise<TicketPageView | null> {
    const own = viewerId !== undefined && this.tokens.readTicket(ticket)?.buyerId === viewerId;
    const d = await this.describe(ticket, own);
    if (!d) return null;
    if (own) return { ...d.view, ...(d.purchaseStatus ? { purchaseStatus: d.purchaseStatus } : {}) };
    // Once the session is over a poll names the purchase too (a stranger's read sees it only then):
    // the page says only that the turn passed.
    const { purchaseId, ...view } = d.view;
    return purchaseId ? { ...view, state: 'expired' } : view;
  }

  /** `readSpent`: read the ticket's row even while the session lasts (a poll does not). */
  private async describe(
    ticket: string,
    readSpent: boolean,
  ): Promise<{ view: TicketView; purchaseStatus?: string } | null> {
    const claims = this.tokens.readTicket(ticket);
    if (!claims) return null;
    const s = await this.cache.get(claims.sku);
    if (!s) return null;
    const { room } = s;
    let place = claims.place;
    let signed = ticket;
    if (place === null && room.shuffled) {
      place = await this.cache.prequeuePlace(claims.sku, claims.ticketId);
      if (place !== null) signed = this.tokens.signTicket({ ...claims, place });
    }
    const base = {
      ticket: signed,
      sku: claims.sku,
      roomState: room.state,
      ...(room.opensAt ? { opensAt: room.opensAt.toISOString() } : {}),
    };
    if (place === null) {
      const untilOpen = room.opensAt ? Math.max(0, Math.ceil((room.opensAt.getTime() - this.clock.now()) / 1000)) : 0;
      if (room.soldOut)
        return { view: { ...base, position: null, state: 'sold_out', estimatedWaitSeconds: untilOpen } };
      // Nobody is let in before the opening: ask again then.
      const nextPoll = nextPollSeconds(untilOpen, untilOpen, this.maxPollSeconds);
      return {
        view: {
          ...base,
          position: null,
          state: 'prequeue',
          estimatedWaitSeconds: untilOpen,
          nextPollSeconds: nextPoll,
        },
      };
    }
    if (place > room.serving) {
      const position = place - room.serving - 1;
      if (room.soldOut) return { view: { ...base, position, state: 'sold_out', estimatedWaitSeconds: 0 } };
      const wait = this.wait(s, position);
      const line = inLine(s, position, wait.estimatedWaitSeconds, this.checkoutsPerSecond, this.maxPollSeconds);
      return { view: { ...base, position, state: 'waiting', ...wait, ...line } };
    }
    const step = stepFor(s, place);
    const live = step !== undefined && step.expiresAt.getTime() > this.clock.now();
    // Whether the turn was spent is in the ticket's row: a poll reads it only once the session is
    // over (few of those), the page and a join read it always.
    const outcome = !live || readSpent ? await ticketOutcome(this.db, claims.ticketId) : null;
    // A purchase that came to nothing (refused before any hold, never under way) does not spend a
    // live turn: the admitter gives it back.
    if (outcome?.purchaseId && !(live && outcome.cameToNothing)) {
      const view = { ...base, position: 0, state: 'admitted' as const, estimatedWaitSeconds: 0 };
      return { view: { ...view, purchaseId: outcome.purchaseId }, purchaseStatus: outcome.purchaseStatus ?? undefined };
    }
    if (!live) return { view: { ...base, position: 0, state: 'expired', estimatedWaitSeconds: 0 } };
    const admissionToken = await this.tokens.signAdmission({
      ...claims,
      admittedAt: step.admittedAt,
      expiresAt: step.expiresAt,
    });
    const expires = step.expiresAt.toISOString();
    return {
      view: {
        ...base,
        position: 0,
        state: 'admitted',
        estimatedWaitSeconds: 0,
        admissionToken,
        admissionExpiresAt: expires,
      },
    };
  }

  /**
   * The admission an `Admission-Token` header grants to `buyerId` for `sku`: the ticket it was issued
   * for, or null when it is missing, forged, expired, or another buyer's or SKU's. No database read:
   * whether it was already spent is decided when the purchase is recorded.
   */
  async admissionOf(token: string | undefined, buyerId: string, sku: string): Promise<{ ticketId: string } | null> {
    if (!token) return null;
    const claims = await this.tokens.verifyAdmission(token);
    if (!claims || claims.buyerId !== buyerId || claims.sku !== sku) return null;
    return { ticketId: claims.ticketId };
  }

  /** A room's state as the product page shows it; null when the SKU has no room. */
  async stateOf(sku: string): Promise<RoomSnapshot['room'] | null> {
    return (await this.cache.get(sku))?.room ?? null;
  }

  /** The operator changed a room: this process reads it again now. */
  async changed(sku: string): Promise<void> {
    await this.cache.invalidate(sku);
  }

  /** Every room this process has read (metrics). */
  rooms(): RoomSnapshot[] {
    return this.cache.snapshots();
  }

  /** Seconds until `ahead` buyers are let in, growing while nobody is (api/queue-wait.ts), and whether the room is full. */
  private wait(s: RoomSnapshot, ahead: number): WaitEstimate {
    return estimateWait(s, ahead, this.clock.now(), this.checkoutsPerSecond);
  }
}
