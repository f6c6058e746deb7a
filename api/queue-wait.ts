import { STEP_MEMORY_SECONDS } from '../store/room';
import { measuredRate, type RoomSnapshot } from '../store/room-cache';

// How long a buyer in line should expect to wait, told honestly: from the measured admission rate
// (the configured one until there is a measure), plus, while the room is not letting anyone in, the
// time nobody has been let in beyond what that rate expects: the estimate grows with the stall
// instead of a configured figure frozen for minutes. Not letting anyone in: paused or closed, full
// by the sessions this process knows of, or with buyers ahead and nobody let in for longer than
// STALL_GRACE_SECONDS past the rate's gap (the room is full of buyers paying after their sessions,
// or every unit is held). The stall is measured from when the line last moved (someone let in, or
// nobody waiting): the idle spell before a burst of buyers joined is no stall.

/** The admitter's count of buyers inside is taken while its last step is this recent (it steps every 100 ms). */
const INSIDE_FRESH_MS = 5_000;
/** Past the rate's gap, this long with buyers ahead and nobody let in is a stall, whatever the cause. */
const STALL_GRACE_SECONDS = 10;

export interface WaitEstimate {
  estimatedWaitSeconds: number;
  /** Nobody is let in until a buyer inside finishes: as many buyers are inside as the room takes (`maxActive`), or the line has stalled. */
  roomFull: boolean;
}

/** Buyers admitted whose sessions have not ended (some may have finished early: at most this many are inside). */
function liveAdmissions(s: RoomSnapshot, now: number): number {
  return s.steps.reduce((n, st) => (st.expiresAt.getTime() > now ? n + st.lastPlace - st.firstPlace + 1 : n), 0);
}

/**
 * Seconds since the line last moved (a buyer let in, or nobody waiting: the admitter's
 * `lineMovedAt`, or the last admission this process knows of when later), beyond the gap `rate`
 * expects between admissions. Before the admitter stepped the room, from the last admission alone:
 * a room that admitted once but whose steps this process no longer remembers (they are forgotten
 * STEP_MEMORY_SECONDS after their session) stalled at least that long.
 */
function stallSeconds(s: RoomSnapshot, now: number, rate: number): number {
  const lastAdmitted = s.steps.at(-1)?.admittedAt.getTime();
  const moved = Math.max(s.room.lineMovedAt?.getTime() ?? -Infinity, lastAdmitted ?? -Infinity);
  const since = Number.isFinite(moved)
    ? (now - moved) / 1000
    : s.room.serving > 0
      ? s.room.sessionSeconds + STEP_MEMORY_SECONDS
      : 0;
  return Math.max(0, since - 1 / rate);
}

/** What every buyer's estimate in one room shares: worked out once per snapshot and FIGURES_FOR_MS. */
interface RoomFigures {
  at: number;
  fallbackRate: number;
  rate: number;
  stall: number;
  live: number;
}

/**
 * How long the shared figures are reused: a crowd polls a room hundreds of times a second, and each
 * figure walks the counter's steps (thousands in a long sale: 10 a second, kept for the session and
 * STEP_MEMORY_SECONDS after).
 */
const FIGURES_FOR_MS = 100;
const figures = new WeakMap<RoomSnapshot, RoomFigures>();

function roomFigures(s: RoomSnapshot, now: number, fallbackRate: number): RoomFigures {
  const known = figures.get(s);
  if (known && known.fallbackRate === fallbackRate && Math.abs(now - known.at) < FIGURES_FOR_MS) return known;
  const rate = Math.max(measuredRate(s, now) ?? s.room.admitPerSecond ?? fallbackRate, 1e-6);
  const fresh = { at: now, fallbackRate, rate, stall: stallSeconds(s, now, rate), live: liveAdmissions(s, now) };
  figures.set(s, fresh);
  return fresh;
}

/**
 * The wait of a buyer with `ahead` buyers before them. `now`: Postgres's clock (store/clock.ts),
 * which the steps were stamped by; `fallbackRate`: the pace when the room has neither a measure nor
 * its own `admitPerSecond` (the Stripe budget's).
 */
export function estimateWait(s: RoomSnapshot, ahead: number, now: number, fallbackRate: number): WaitEstimate {
  const { rate, stall, live } = roomFigures(s, now, fallbackRate);
  const open = s.room.state === 'open';
  // Full: as many buyers inside as the room takes (the admitter's count; without a recent one, no
  // admitter stepping it, the sessions running), or an open room lets nobody in past its grace (its
  // buyers still pay after their sessions, or hold every unit).
  const counted = s.room.inside != null && now - (s.room.steppedAt?.getTime() ?? 0) < INSIDE_FRESH_MS;
  const inside = counted ? s.room.inside! : live;
  const roomFull = inside >= s.room.maxActive || (open && ahead > 0 && stall > STALL_GRACE_SECONDS);
  const stalled = roomFull || !open;
  return { estimatedWaitSeconds: Math.ceil((ahead + 1) / rate + (stalled ? stall : 0)), roomFull };
}
