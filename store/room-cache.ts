import type { Clock } from './clock';
import type { Db } from './db';
import { prequeuePlaces, readRoom, STEP_MEMORY_SECONDS, type AdmissionStep, type RoomRow } from './room';

const DEFAULT_REFRESH_MS = 200;
/** A snapshot older than this many refresh periods is read again before it answers. */
const STALE_FACTOR = 3;
/** The window the admission rate is measured over. */
const RATE_WINDOW_MS = 10_000;

/** One room as this process last read it. */
export interface RoomSnapshot {
  room: RoomRow;
  /** Steps of the serving counter, oldest first, as far back as STEP_MEMORY_SECONDS after their session. */
  steps: AdmissionStep[];
  /** When its read began (host clock, ms): the serving counter is at least this old. */
  readAt: number;
}

interface Entry {
  snapshot: RoomSnapshot | null;
  readAt: number;
  reading: Promise<void> | null;
  prequeue?: Promise<Map<string, number>>;
}

/**
 * Each API process's view of its rooms: the room row (the serving counter) and the recent steps of
 * the counter, read at most every `refreshMs` per room however many polls arrive, and only the
 * steps it lacks. A poll is answered from here and the ticket, with no read of its own; a stale
 * entry answers at once while one read renews it in the background.
 */
export class RoomCache {
  private readonly rooms = new Map<string, Entry>();
  private readonly refreshMs: number;
  private readonly clock: Clock;

  /** `clock`: Postgres's (store/clock.ts), which the steps' instants are in. */
  constructor(
    private readonly db: Db,
    opts: { clock: Clock; refreshMs?: number },
  ) {
    this.clock = opts.clock;
    this.refreshMs = opts.refreshMs ?? DEFAULT_REFRESH_MS;
  }

  /** The room of `sku` (null: none), at most STALE_FACTOR × `refreshMs` old (a read that fails throws). */
  async get(sku: string): Promise<RoomSnapshot | null> {
    let e = this.rooms.get(sku);
    if (!e) {
      e = { snapshot: null, readAt: 0, reading: null };
      this.rooms.set(sku, e);
    }
    const age = Date.now() - e.readAt;
    // Slightly stale: answer now, renew in the background. Older (no poll for a while): wait for a read.
    if (age >= STALE_FACTOR * this.refreshMs) await this.refresh(sku, e);
    else if (age >= this.refreshMs) this.refresh(sku, e).catch(() => {});
    return e.snapshot;
  }

  /** Read again before the next answer (the operator changed the room). */
  async invalidate(sku: string): Promise<void> {
    const e = this.rooms.get(sku);
    if (e) await this.refresh(sku, e);
  }

  /** The place the opening's shuffle gave a pre-queue ticket: all of them are read once, the first time one is asked. */
  async prequeuePlace(sku: string, ticketId: string): Promise<number | null> {
    const e = this.rooms.get(sku);
    if (!e?.snapshot?.room.shuffled) return null;
    e.prequeue ??= prequeuePlaces(this.db, sku);
    e.prequeue.catch(() => (e.prequeue = undefined));
    return (await e.prequeue).get(ticketId) ?? null;
  }

  /** Every room this process has read (for metrics). */
  snapshots(): RoomSnapshot[] {
    return [...this.rooms.values()].flatMap((e) => (e.snapshot ? [e.snapshot] : []));
  }

  private refresh(sku: string, e: Entry): Promise<void> {
    e.reading ??= (async () => {
      try {
        const old = e.snapshot;
        const after = old?.steps.at(-1)?.lastPlace ?? 0;
        // The snapshot is as old as its first statement (the room row): a read that waited for a
        // connection must not make the serving counter look younger than it is to the polls' timing.
        const asOf = Date.now();
        const read = await readRoom(this.db, sku, after);
        const now = Date.now();
        const recordNow = this.clock.now();
        if (!read) {
          // Not remembered: any SKU a buyer sends would otherwise grow this map for ever.
          e.snapshot = null;
          if (this.rooms.get(sku) === e) this.rooms.delete(sku);
        } else {
          const forgetBefore = recordNow - STEP_MEMORY_SECONDS * 1000;
          const kept = (old?.steps ?? []).filter((s) => s.expiresAt.getTime() > forgetBefore);
          e.snapshot = { room: read.room, steps: [...kept, ...read.steps], readAt: asOf };
        }
        e.readAt = now;
      } finally {
        e.reading = null;
      }
    })();
    return e.reading;
  }
}

/** The step that admitted `place`, if this cache still remembers it. */
export function stepFor(s: RoomSnapshot, place: number): AdmissionStep | undefined {
  let lo = 0;
  let hi = s.steps.length - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    const step = s.steps[mid];
    if (place < step.firstPlace) hi = mid - 1;
    else if (place > step.lastPlace) lo = mid + 1;
    else return step;
  }
  return undefined;
}

/**
 * Buyers admitted per second over the last RATE_WINDOW_MS, from the counter's steps; null before two
 * steps. `now`: Postgres's (store/clock.ts), the clock the steps were stamped by.
 */
export function measuredRate(s: RoomSnapshot, now: number): number | null {
  const recent = s.steps.filter((st) => now - st.admittedAt.getTime() <= RATE_WINDOW_MS);
  if (recent.length < 2) return null;
  // Up to now, not to the last step: a room that stopped admitting (full, paused) measures slower.
  const span = (now - recent[0].admittedAt.getTime()) / 1000;
  if (span <= 0) return null;
  // The first step's buyers were admitted at the window's start: the rate is what came after it.
  const after = recent.slice(1).reduce((n, st) => n + st.lastPlace - st.firstPlace + 1, 0);
  return after / span;
}
