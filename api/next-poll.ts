import { variable } from '../config/variables';
import type { RoomSnapshot } from '../store/room-cache';

// When a buyer in line should ask again (`nextPollSeconds` and `Retry-After` of a poll's answer): by
// their position, rarely far from the head and often near it. A poll is cheap (no database read), but
// a crowd of 10,000 asking every few seconds for minutes is most of what the API does in a drop.

/**
 * The longest a buyer in line is told to wait by default (ROOM_MAX_POLL_SECONDS): news that is not
 * their turn (the room closed, sold out) reaches them within it.
 */
export const MAX_POLL_SECONDS = Number(variable('ROOM_MAX_POLL_SECONDS').default);
/** The shortest: a buyer at the head asks about once a second, as the queue page always did. */
export const MIN_POLL_SECONDS = 1;
/** A buyer the room may let in soon asks after half the estimate, at most this long (the rule before issue 35). */
const NEAR_POLL_SECONDS = 10;

/**
 * Seconds until the buyer asks again: half the estimated wait (1 to 10 s), or, when later, the
 * earliest moment their turn can come (`earliestSeconds`, earliestTurn below), at most
 * `maxSeconds` (MAX_POLL_SECONDS). A buyer far from the head polls once their turn can be near, whatever
 * the estimate says: asking before then costs and tells nothing. So no buyer notices a turn later than
 * with half-the-estimate polls capped at 10 s, and a buyer 50 s from the head at full pace polls once.
 */
export function nextPollSeconds(etaSeconds: number, earliestSeconds: number, maxSeconds = MAX_POLL_SECONDS): number {
  const near = Math.min(NEAR_POLL_SECONDS, Math.max(MIN_POLL_SECONDS, Math.ceil(etaSeconds / 2)));
  return Math.min(maxSeconds, Math.max(near, Math.floor(earliestSeconds)));
}

/**
 * The fewest seconds before `ahead` more buyers can be let in, so before this buyer's turn: the
 * admitter (store/admitter.ts) lets in at most the room's `admitPerSecond` (or the Stripe budget's
 * `fallbackRate`) a second, plus at most one second's worth of credit at once; less the age of this
 * process's copy of the counter, which may already have moved, and a second for the admitter's tick.
 * Holds whatever the measured rate: a stalled room resumes at that pace at most. Only an operator
 * raising `admitPerSecond` beats it, by at most MAX_POLL_SECONDS.
 */
export function earliestTurn(s: RoomSnapshot, ahead: number, fallbackRate: number, nowMs = Date.now()): number {
  const rate = Math.max(s.room.admitPerSecond ?? fallbackRate, 1e-6);
  const burst = Math.max(1, rate);
  const stale = Math.max(0, nowMs - s.readAt) / 1000;
  return Math.max(0, (ahead + 1 - burst) / rate - stale - 1);
}

/** Every unit that can still be had is spoken for by buyers inside (store/admitter.ts writes it on the room row). */
export interface SoldOutForNow {
  /** Units that could still come back to the line: held by buyers inside, or free and theirs to take. */
  unitsMayComeBack: number;
  /** When the next of them may (a hold's end, or its grace's); absent when none is held. */
  nextMayComeBackAt?: string;
  /** Fewer buyers ahead than units that may come back: a unit that comes back may reach this buyer. */
  withinReach: boolean;
}

/**
 * What a buyer in line is told besides the estimate: when to ask again, and whether the room is sold
 * out for now. A buyer beyond reach of every unit that may come back keeps their place but has
 * nothing to wait for until a restock or a sale that fails: they ask at the longest interval,
 * `maxPollSeconds`.
 */
export function inLine(
  s: RoomSnapshot,
  position: number,
  etaSeconds: number,
  fallbackRate: number,
  maxPollSeconds = MAX_POLL_SECONDS,
): { nextPollSeconds: number; soldOutForNow?: SoldOutForNow } {
  const units = s.room.unitsMayReturn;
  const forNow =
    units === null || units === undefined
      ? undefined
      : {
          unitsMayComeBack: units,
          ...(s.room.nextReturnAt ? { nextMayComeBackAt: s.room.nextReturnAt.toISOString() } : {}),
          withinReach: position < units,
        };
  const next =
    forNow && !forNow.withinReach
      ? maxPollSeconds
      : nextPollSeconds(etaSeconds, earliestTurn(s, position, fallbackRate), maxPollSeconds);
  return { nextPollSeconds: next, ...(forNow ? { soldOutForNow: forNow } : {}) };
}
