import type { Db } from './db';

// One clock for every comparison against an instant the record holds (a product's opensAt, a hold's
// expires_at, an admission's end): Postgres's. The admitter, the holds and the stock views decide by
// `now()` in SQL; an API process that decided by its own clock would, on a host whose clock drifts,
// refuse `not-open` after the room opened or let a buyer in before. Asking Postgres on every
// purchase would cost the crowd a round trip the gate exists to avoid, so each process measures its
// offset to Postgres (at start, then every so often) and adds it to its own clock.

/** "Now" in milliseconds since the epoch, as the record counts it. */
export interface Clock {
  now(): number;
}

/** This process's own clock, uncorrected: only for what no stored instant is compared with. */
export const hostClock: Clock = { now: () => Date.now() };

export interface DbClockOptions {
  /** This process's own clock (default Date.now); a test passes one that is off. */
  local?: () => number;
  /** How often the offset is measured again (default 30 s): host clocks drift, and NTP steps them. */
  refreshMs?: number;
  log?: (line: string) => void;
}

const DEFAULT_REFRESH_MS = 30_000;
/** Round trips per measurement: the quickest one bounds the error best (at most half its length). */
const SAMPLES = 5;
/** The host clock's step (Date.now() counts whole milliseconds): part of every error bound. */
const LOCAL_RESOLUTION_MS = 1;
/** An offset larger than this is logged: the host's clock wants fixing, whatever this corrects. */
const WARN_OFFSET_MS = 1_000;
/**
 * A measurement whose error bound is worse than this (and than twice the one in use) keeps the one in
 * use: under a crowd every round trip also waits for a pool connection, which would bias the offset
 * by half the wait. After STALE_AFTER_REFRESHES refreshes the newest is taken whatever its error, and
 * at once when it contradicts the one in use beyond both error bounds (a clock stepped by NTP).
 */
const ACCEPT_ERROR_MS = 25;
const STALE_AFTER_REFRESHES = 10;

/** A measured offset: Postgres's clock minus this host's, and how far off it can be (half the round trip). */
export interface ClockOffset {
  offsetMs: number;
  errorMs: number;
}

/**
 * This host's clock corrected by its measured offset to Postgres's (Cristian's algorithm: the
 * server's `clock_timestamp()` is taken to be read halfway through the quickest of a few round
 * trips). Until `start()` has measured, it is the host's clock. A failed measurement keeps the
 * last offset: a drift of milliseconds per minute does not make it wrong by the next one.
 */
export class DbClock implements Clock {
  private readonly local: () => number;
  private readonly refreshMs: number;
  private readonly log: (line: string) => void;
  private last: ClockOffset = { offsetMs: 0, errorMs: Infinity };
  private lastAt = 0;
  private timer?: NodeJS.Timeout;

  constructor(
    private readonly db: Db,
    opts: DbClockOptions = {},
  ) {
    this.local = opts.local ?? Date.now;
    this.refreshMs = opts.refreshMs ?? DEFAULT_REFRESH_MS;
    this.log = opts.log ?? (() => {});
  }

  /** Measures the offset (throws if Postgres cannot be reached), then again every `refreshMs`. */
  async start(): Promise<void> {
    await this.measure();
    this.timer = setInterval(() => {
      this.measure().catch((err: Error) => this.log(`clock: measuring the offset to Postgres failed: ${err.message}`));
    }, this.refreshMs);
    this.timer.unref();
  }

  close(): void {
    clearInterval(this.timer);
  }

  now(): number {
    return this.local() + this.last.offsetMs;
  }

  /** The offset in use (metrics, logs). */
  offset(): ClockOffset {
    return this.last;
  }

  /** One measurement: the quickest of SAMPLES round trips (kept only if it is not much worse than the one in use). */
  async measure(): Promise<ClockOffset> {
    let best: ClockOffset | undefined;
    for (let i = 0; i < SAMPLES; i++) {
      const sent = this.local();
      // Microseconds as a float: a timestamptz would arrive as a Date, cut to the millisecond.
      const { rows } = await this.db.query<{ at: number }>(
        'SELECT (extract(epoch FROM clock_timestamp()) * 1000)::float8 AS at',
      );
      const back = this.local();
      // The host's clock counts whole milliseconds: the query began in [sent, sent + 1) and its answer
      // came in [back, back + 1), so Postgres read its clock somewhere in [sent, back + 1).
      const sample = {
        offsetMs: rows[0].at - (sent + back + LOCAL_RESOLUTION_MS) / 2,
        errorMs: (back + LOCAL_RESOLUTION_MS - sent) / 2,
      };
      if (!best || sample.errorMs < best.errorMs) best = sample;
    }
    const was = this.last;
    const stale = this.local() - this.lastAt > STALE_AFTER_REFRESHES * this.refreshMs;
    // A noisy measurement still proves the one in use wrong when the two differ by more than both
    // error bounds (the host's clock was stepped): then the noisy one is nearer the truth.
    const contradicts = Math.abs(best!.offsetMs - was.offsetMs) > best!.errorMs + was.errorMs;
    if (best!.errorMs > Math.max(ACCEPT_ERROR_MS, 2 * was.errorMs) && !stale && !contradicts) return was;
    this.last = best!;
    this.lastAt = this.local();
    if (Math.abs(best!.offsetMs) > WARN_OFFSET_MS && Math.abs(best!.offsetMs - was.offsetMs) > WARN_OFFSET_MS / 2) {
      const side = best!.offsetMs < 0 ? 'ahead of' : 'behind';
      this.log(
        `clock: this host's clock is ${Math.round(Math.abs(best!.offsetMs))} ms ${side} Postgres's; decisions use Postgres's (fix NTP on this host)`,
      );
    }
    return best!;
  }
}
