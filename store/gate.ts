import type { Clock } from './clock';
import type { Db } from './db';
import { NotifyListener } from './notify-listener';
import { stockView, type StockView } from './products';

/** How often every SKU's view is read again even when no notification came (a lost one heals this soon). */
const DEFAULT_RESYNC_MS = 5_000;
/** A view older than this is read again before it refuses anyone. */
const MAX_REFUSAL_AGE_MS = 30_000;
/** When units are only in flight (not held), a refused buyer may try again this soon. */
export const IN_FLIGHT_RETRY_MS = 1_000;
/**
 * A permit whose hold step has not shown up in a view after this long is dropped: its saga did not
 * run (a start that failed after all, a worker down). Until then the gate under-admits; if the saga
 * runs later it still takes its hold with the conditional update, so nothing is oversold. Long,
 * because dropping a permit too early feeds an overload: on a loaded server a start and its first
 * task can take tens of seconds, and each permit dropped meanwhile starts one more saga that the hold
 * step refuses (30 s measured 987 permits and 220 refused sagas for 600 units, load average 4).
 */
const PERMIT_TTL_MS = 120_000;
/** A permit whose start call failed (the saga may still have started, or may never): dropped sooner. */
const DOUBTFUL_PERMIT_TTL_MS = 30_000;
const CHANNEL = 'stock_changed';

export interface GateOptions {
  /** "Now" as Postgres counts it (store/clock.ts): holds lapse by its clock, so the lapse timer and `retryAt` do too. */
  clock: Clock;
  /** The process's LISTEN connection (store/notify-listener.ts), started by its owner; else the gate has its own. */
  listener?: NotifyListener;
  resyncMs?: number;
  log?: (line: string) => void;
}

/** A right to start one saga for `units` of a SKU; settle it once the saga's hold step has answered. */
export interface Permit {
  readonly sku: string;
  readonly units: number;
  /** The purchase this permit became: once its hold row exists, a view read counts it and the permit is done. */
  bind(purchaseId: string): void;
  settle(): void;
  /** Its saga's start call failed: kept only DOUBTFUL_PERMIT_TTL_MS, in case the start went through after all. */
  doubt(): void;
  /** Its saga starts `ms` from now (its turn in the Stripe budget's pace): kept that much longer. */
  delay(ms: number): void;
}

/** What a buyer refused for want of a unit may expect. `final`: nothing is held or in flight, nothing can come back. */
export interface SoldOutOutlook {
  final: boolean;
  /** When a unit may be free again (not final). */
  retryAt?: Date;
  /** Units free now, fewer than were asked for (final, and more than none: a smaller quantity may be had). */
  left?: number;
}

/** The words of a sold-out answer for `sku`. */
export function soldOutDetail(sku: string, o: SoldOutOutlook): string {
  if (!o.final) return `${sku} is sold out for now: units are held and may come back`;
  if (o.left) return `only ${o.left} of ${sku} left: ask for at most ${o.left}`;
  return `${sku} is sold out`;
}

export type GateAnswer =
  | { outcome: 'permit'; permit: Permit }
  /** Nothing to be had now. `viewReadAt`: when the read this answer comes from had returned (Date.now()). */
  | ({ outcome: 'sold_out'; viewReadAt: number } & SoldOutOutlook)
  | { outcome: 'unknown_product' };

interface InFlight {
  units: number;
  grantedAt: number;
  ttlMs: number;
  purchaseId?: string;
  /** Set when the saga's hold step answered: the permit counts until a view read after that replaces it. */
  settledAt?: number;
}

interface SkuState {
  view: StockView | null;
  readAt: number;
  /** A read is running; `again` asks for one more after it (a notification arrived meanwhile). */
  reading: Promise<void> | null;
  again: boolean;
  inFlight: Set<InFlight>;
  lapseTimer?: NodeJS.Timeout;
}

/**
 * The gate: the cheapest possible "no". Per SKU, this process keeps what Postgres says can still be
 * had (lapsed holds counted as available) and when the next hold lapses, refreshed by `stock_changed`
 * notifications (one read in flight per SKU), a periodic resync and a timer at the next lapse. It
 * hands out at most as many permits as units remain, minus its own sagas in flight whose hold has
 * not shown up in a view yet; everyone else is answered from memory. A cache, never the record: the
 * saga still takes the hold with the conditional update, and a lost view is rebuilt from Postgres.
 */
export class Gate {
  private readonly skus = new Map<string, SkuState>();
  private readonly resyncMs: number;
  private readonly log: (line: string) => void;
  private readonly clock: Clock;
  private readonly listener: NotifyListener;
  /** The listener is this gate's own (none was given): it starts and closes it. */
  private readonly ownListener: boolean;
  private resync?: NodeJS.Timeout;
  private closed = false;

  constructor(
    private readonly db: Db,
    private readonly databaseUrl: string,
    opts: GateOptions,
  ) {
    this.clock = opts.clock;
    this.resyncMs = opts.resyncMs ?? DEFAULT_RESYNC_MS;
    this.log = opts.log ?? (() => {});
    this.ownListener = !opts.listener;
    this.listener = opts.listener ?? new NotifyListener(databaseUrl, this.log);
    // Stock changes reach every view at once; after a (re)connect, what was sent meanwhile is read again.
    this.listener.on(
      CHANNEL,
      (sku) => this.schedule(sku),
      () => this.refreshAll(),
    );
  }

  /** Starts listening for stock changes and the periodic resync. */
  async start(): Promise<void> {
    if (this.ownListener) await this.listener.start();
    this.resync = setInterval(() => this.refreshAll(), this.resyncMs);
    this.resync.unref();
  }

  async close(): Promise<void> {
    this.closed = true;
    clearInterval(this.resync);
    for (const s of this.skus.values()) clearTimeout(s.lapseTimer);
    if (this.ownListener) await this.listener.close();
  }

  /** A permit for `units` of `sku`, or the answer for everyone who cannot have one. */
  async enter(sku: string, units: number): Promise<GateAnswer> {
    const s = await this.state(sku);
    if (!s.view) return { outcome: 'unknown_product' };
    // Before a refusal: a view that is old, or that still counts permits whose holds have settled
    // (a saga that failed gave its unit back), is read again first.
    if (this.free(s) < units && (Date.now() - s.readAt > MAX_REFUSAL_AGE_MS || this.settledPending(s))) {
      await this.refresh(sku);
    }
    const view = s.view;
    if (this.free(s) >= units) {
      const flight: InFlight = { units, grantedAt: Date.now(), ttlMs: PERMIT_TTL_MS };
      s.inFlight.add(flight);
      const permit: Permit = {
        sku,
        units,
        bind: (purchaseId) => {
          flight.purchaseId = purchaseId;
        },
        settle: () => {
          if (flight.settledAt !== undefined) return;
          flight.settledAt = Date.now();
          // The hold (or its refusal) is committed: the next read sees it, and drops this permit.
          this.schedule(sku);
        },
        doubt: () => {
          flight.ttlMs = Math.min(flight.ttlMs, DOUBTFUL_PERMIT_TTL_MS);
        },
        delay: (ms) => {
          flight.ttlMs += Math.max(0, ms);
        },
      };
      return { outcome: 'permit', permit };
    }
    return { outcome: 'sold_out', viewReadAt: s.readAt, ...this.outlookOf(s, view, units) };
  }

  /**
   * What a buyer of `units` whose saga's hold step found too few free may expect, from a view read
   * now (the gate's was read before it gave that saga its permit); null when there is no such product.
   */
  async outlook(sku: string, units: number): Promise<SoldOutOutlook | null> {
    const known = this.skus.has(sku);
    const s = await this.state(sku);
    if (known) await this.refresh(sku);
    return s.view ? this.outlookOf(s, s.view, units) : null;
  }

  private outlookOf(s: SkuState, view: StockView, units: number): SoldOutOutlook {
    const inFlight = [...s.inFlight].some((f) => f.settledAt === undefined);
    const short = this.free(s) < units;
    if (short && view.held === 0 && !inFlight) {
      const free = Math.max(0, this.free(s));
      return free > 0 ? { final: true, left: free } : { final: true };
    }
    const retryAt =
      short && view.held > 0 && view.nextLapseAt ? view.nextLapseAt : new Date(this.clock.now() + IN_FLIGHT_RETRY_MS);
    return { final: false, retryAt };
  }

  /** The current view of every SKU this process has seen (for metrics). */
  views(): { sku: string; remaining: number; held: number; inFlight: number }[] {
    return [...this.skus.entries()]
      .filter(([, s]) => s.view)
      .map(([sku, s]) => ({ sku, remaining: s.view!.remaining, held: s.view!.held, inFlight: this.inFlightUnits(s) }));
  }

  /** Forget what this process believed about a SKU and read it again (a restock, a refund put back on sale). */
  async stockChanged(sku: string): Promise<void> {
    if (this.skus.has(sku)) await this.refresh(sku);
  }

  private settledPending(s: SkuState): boolean {
    for (const f of s.inFlight) if (f.settledAt !== undefined) return true;
    return false;
  }

  private free(s: SkuState): number {
    return (s.view?.remaining ?? 0) - this.inFlightUnits(s);
  }

  private inFlightUnits(s: SkuState): number {
    let n = 0;
    for (const f of s.inFlight) n += f.units;
    return n;
  }

  private async state(sku: string): Promise<SkuState> {
    let s = this.skus.get(sku);
    if (!s) {
      s = { view: null, readAt: 0, reading: null, again: false, inFlight: new Set() };
      this.skus.set(sku, s);
      await this.refresh(sku);
    } else if (s.readAt === 0) {
      // The first read failed, or is still running: wait for one.
      await this.refresh(sku);
    }
    return s;
  }

  /** A read of this SKU soon, coalesced with any already running. */
  private schedule(sku: string): void {
    this.refresh(sku).catch((err: Error) => this.log(`gate: reading ${sku} failed: ${err.message}`));
  }

  private refresh(sku: string): Promise<void> {
    const s = this.skus.get(sku);
    if (!s) return Promise.resolve();
    if (s.reading) {
      s.again = true;
      return s.reading;
    }
    s.reading = (async () => {
      try {
        do {
          s.again = false;
          const startedAt = Date.now();
          const pending = [...s.inFlight].flatMap((f) => (f.purchaseId ? [f.purchaseId] : []));
          s.view = await stockView(this.db, sku, pending);
          s.readAt = Date.now();
          // Permits whose hold step this read saw answered, or whose saga answered before it began, are
          // now part of the view; so is a permit too old to be waited for.
          const landed = new Set(s.view?.landed ?? []);
          for (const f of s.inFlight) {
            if (
              (f.purchaseId && landed.has(f.purchaseId)) ||
              (f.settledAt !== undefined && f.settledAt < startedAt) ||
              startedAt - f.grantedAt > f.ttlMs
            ) {
              s.inFlight.delete(f);
            }
          }
          this.armLapseTimer(sku, s);
        } while (s.again);
      } finally {
        s.reading = null;
      }
    })();
    return s.reading;
  }

  /** Expiry is checked on read, and no statement runs when a hold lapses: read again at the next lapse. */
  private armLapseTimer(sku: string, s: SkuState): void {
    clearTimeout(s.lapseTimer);
    const at = s.view?.nextLapseAt;
    if (!at || this.closed) return;
    const delay = Math.min(Math.max(0, at.getTime() - this.clock.now()) + 50, 2 ** 31 - 1);
    s.lapseTimer = setTimeout(() => this.schedule(sku), delay);
    s.lapseTimer.unref();
  }

  private refreshAll(): void {
    for (const sku of this.skus.keys()) this.schedule(sku);
  }
}
