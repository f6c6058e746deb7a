// The drill's figures: what was rehearsed, the headline (how many buyers it served, how fast, how
// long the queue got, what was sold, refunded, oversold or lost), the outcome of every buyer, the
// invariants, the latencies and the timeline. `summary.json` is this object; the report draws it.
import type { AbuseFigures } from './abuser';
import { crowdFigures, crowdRows, type CrowdFigures } from './crowd-figures';
import type { Check } from './invariants';
import type { Measured } from './measure';
import { BEHAVIOURS, type DrillOptions } from './options';
import { percentiles, type Percentiles, type Recorder } from './recorder';
import { ruleCounts, type SaleRules } from './rules';

/** One sample of the timeline, every second. */
export interface Sample {
  /** Seconds since the opening. */
  t: number;
  /** Buyers the drill sees waiting: in the room's line (polling their ticket), or to try Buy again. */
  queued: number;
  /** Buyers admitted so far, as the buyers saw it (with a room; without one, every buyer who arrived may try). */
  admitted: number;
  /**
   * With a room, its own counts (GET /v1/products/:sku/waiting-room) at this second; absent when it
   * did not answer. `waiting` counts the tickets in line (0 once the room is sold out); `queued`
   * is the drill's own count of the buyers still polling.
   */
  room?: { waiting: number; admitted: number; active: number; soldOut: boolean };
  /** Checkouts opened so far. */
  checkouts: number;
  /** Buyers with a checkout open, not yet paid or gone. */
  holding: number;
  held?: number;
  sold?: number;
  available?: number;
  paid: number;
  confirmed: number;
  refunded: number;
  soldOut: number;
  done: number;
}

export interface Summary {
  version: 1;
  startedAt: string;
  sku: string;
  target: string;
  /** The per-address limits the APIs ran with, in words. */
  addressLimits?: string;
  options: {
    buyers: number;
    units: number;
    holdSeconds: number;
    room: DrillOptions['room'] | null;
    arrivalSeconds: number;
    opensInSeconds: number | null;
    early: number;
    mix: DrillOptions['mix'];
    seed: number;
    concurrency: number;
  };
  headline: {
    buyers: number;
    units: number;
    sold: number;
    checkouts: number;
    refunded: number;
    /** Refunded although the buyer paid before the hold lapsed: the payment's news came after the unit was handed on. */
    paidInTimeRefunded: number;
    oversold: number;
    /** Buyers with no outcome, or a paid session that did not settle: should be 0. */
    lost: number;
    /** Answers to POST /v1/purchases per second, over the seconds that had any. */
    purchaseAnswersPerSecond: number;
    /** Peak checkouts opened in one second. */
    peakCheckoutsPerSecond: number;
    /** From the opening to the last unit sold, when all were. */
    secondsToSellOut: number | null;
    /** Seconds after the opening of the last checkout a buyer got. */
    lastCheckoutSeconds: number | null;
    peakQueue: number;
    purchaseP50Ms: number;
    purchaseP99Ms: number;
    /** From a winner's arrival to its checkout URL. */
    waitForCheckout: Percentiles;
    /**
     * What the requests waited for one of the drill's own sockets (`--concurrency`), left out of every
     * latency here: a buyer has a connection of its own. Far from 0, the drill throttled its crowd.
     */
    socketWait: Percentiles;
    /**
     * How late the drill's own event loop ran while the crowd ran, in ms: a latency here includes the
     * drill's delay in reading its answer. Far from 0, the drill measured its own busy loop too.
     */
    drillLoopDelay: Percentiles;
    durationSeconds: number;
    invariantsHeld: boolean;
  };
  outcomes: Record<string, number>;
  outcomesByBehaviour: Record<string, Record<string, number>>;
  /**
   * With bots in the crowd: what each rule stopped (`bot check: missing`, `bot check: reused`,
   * `address limit`, `not stopped`), bots and humans apart, and what solving cost the humans here.
   */
  rules?: ReturnType<typeof ruleCounts> & { humansSolved: number; humanSolveAttempts: number };
  /** With a room: what the waiting crowd cost (joins, polls per buyer and per minute waited, purchase reads). */
  crowd?: CrowdFigures;
  invariants: Check[];
  latency: Array<{ answer: string } & Percentiles>;
  purchaseLatencyPerSecond: Array<{ second: number; answers: number; p50: number; p99: number }>;
  timeline: Sample[];
  /** The faults set off mid-drop and how far each moved it (empty without faults). */
  faults: Measured['faults'];
  /** The APIs' own time per route (their /metrics), when the drill started them. */
  apiTimes?: Measured['apiTimes'];
  balancerTimes?: Measured['balancerTimes'];
  /** With --cluster: CPU by kind of process, per sale and per refused buyer. */
  cost?: Measured['cost'];
  /** Memory peaks, log volume and (with --cluster) Postgres's growth over the drop. */
  footprint?: Measured['footprint'];
  /** Temporal Cloud actions counted from the drop's histories (when the drill sees Temporal). */
  temporalActions?: Measured['temporalActions'];
  /** Stripe's calls and 429s during the drop, and its floor (when the emulator has a rate limiter). */
  stripe?: Measured['stripe'];
  /** The same crowd without faults, run first on the same deployment (--baseline). */
  baseline?: Measured['baseline'];
  /** With --abuser: what the one abusive address was answered. */
  abuse?: AbuseFigures;
}

/** Seconds after the opening of the first sample with every unit sold, or null. */
export function soldOutAt(timeline: Sample[], units: number): number | null {
  return timeline.find((s) => s.sold !== undefined && s.sold >= units)?.t ?? null;
}

export function summarise(o: {
  opts: DrillOptions;
  startedAt: Date;
  sku: string;
  target: string;
  recorder: Recorder;
  timeline: Sample[];
  checks: Check[];
  product: { sold: number; oversold: number };
  endedAt: number;
  rules?: SaleRules;
  measured?: Measured;
  addressLimits?: string;
  abuse?: AbuseFigures;
}): Summary {
  const { recorder, opts } = o;
  const buyers = recorder.buyers;
  const perSecond = recorder.purchaseLatencyPerSecond();
  const answered = perSecond.reduce((n, s) => n + s.answers, 0);
  const checkoutsPerSecond = new Map<number, number>();
  for (const b of buyers) {
    if (b.checkoutAt === undefined) continue;
    const s = Math.floor(b.checkoutAt / 1000);
    checkoutsPerSecond.set(s, (checkoutsPerSecond.get(s) ?? 0) + 1);
  }
  const soldOut = soldOutAt(o.timeline, opts.units);
  const byBehaviour: Record<string, Record<string, number>> = {};
  for (const b of BEHAVIOURS) byBehaviour[b] = {};
  for (const b of buyers) {
    const row = byBehaviour[b.behaviour];
    row[b.outcome ?? 'none'] = (row[b.outcome ?? 'none'] ?? 0) + 1;
  }
  const p = percentiles(recorder.purchaseLatencies());
  const lost =
    buyers.filter((b) => !b.outcome).length +
    buyers.filter(
      (b) => b.paid && b.paid !== 'bank_debit' && !['confirmed', 'late_confirmed', 'refunded'].includes(b.status ?? ''),
    ).length;
  return {
    version: 1,
    startedAt: o.startedAt.toISOString(),
    sku: o.sku,
    target: o.target,
    ...(o.addressLimits ? { addressLimits: o.addressLimits } : {}),
    options: {
      buyers: opts.buyers,
      units: opts.units,
      holdSeconds: opts.holdSeconds,
      room: opts.room ?? null,
      arrivalSeconds: opts.arrivalSeconds,
      opensInSeconds: opts.room ? opts.opensInSeconds : null,
      early: opts.early,
      mix: opts.mix,
      seed: opts.seed,
      concurrency: opts.concurrency,
    },
    headline: {
      buyers: buyers.length,
      units: opts.units,
      sold: o.product.sold,
      checkouts: buyers.filter((b) => b.purchaseId).length,
      refunded: buyers.filter((b) => b.status === 'refunded').length,
      paidInTimeRefunded: buyers.filter(
        (b) =>
          b.status === 'refunded' &&
          b.paidAt !== undefined &&
          b.holdExpiresAt !== undefined &&
          b.paidAt < b.holdExpiresAt,
      ).length,
      oversold: o.product.oversold,
      lost,
      purchaseAnswersPerSecond: perSecond.length ? Math.round(answered / perSecond.length) : 0,
      peakCheckoutsPerSecond: Math.max(0, ...checkoutsPerSecond.values()),
      secondsToSellOut: soldOut,
      lastCheckoutSeconds: checkoutsPerSecond.size
        ? Math.round(Math.max(...buyers.flatMap((b) => (b.checkoutAt === undefined ? [] : [b.checkoutAt]))) / 100) / 10
        : null,
      // With a room, the longest line the room itself counted; without one, the buyers waiting to try again.
      peakQueue: Math.max(0, ...o.timeline.map((s) => (opts.room ? (s.room?.waiting ?? 0) : s.queued))),
      purchaseP50Ms: p.p50,
      purchaseP99Ms: p.p99,
      waitForCheckout: percentiles(
        buyers.filter((b) => b.checkoutAt !== undefined).map((b) => b.checkoutAt! - Math.max(0, b.arrivedAt ?? 0)),
      ),
      socketWait: recorder.socketWait(),
      drillLoopDelay: recorder.loopDelay(),
      durationSeconds: Math.round(o.endedAt / 100) / 10,
      invariantsHeld: o.checks.every((c) => c.result !== 'fail'),
    },
    outcomes: recorder.outcomes(),
    outcomesByBehaviour: byBehaviour,
    ...(o.rules?.on
      ? {
          rules: {
            ...ruleCounts(buyers),
            humansSolved: o.rules.solved,
            humanSolveAttempts: o.rules.attempts,
          },
        }
      : {}),
    ...(opts.room ? { crowd: crowdFigures(recorder) } : {}),
    invariants: o.checks,
    latency: recorder.latencyByAnswer(),
    purchaseLatencyPerSecond: perSecond,
    timeline: o.timeline,
    faults: o.measured?.faults ?? [],
    ...(o.measured?.apiTimes ? { apiTimes: o.measured.apiTimes } : {}),
    ...(o.measured?.balancerTimes ? { balancerTimes: o.measured.balancerTimes } : {}),
    ...(o.measured?.cost ? { cost: o.measured.cost } : {}),
    ...(o.measured?.footprint ? { footprint: o.measured.footprint } : {}),
    ...(o.measured?.temporalActions ? { temporalActions: o.measured.temporalActions } : {}),
    ...(o.measured?.stripe ? { stripe: o.measured.stripe } : {}),
    ...(o.measured?.baseline ? { baseline: o.measured.baseline } : {}),
    ...(o.abuse ? { abuse: o.abuse } : {}),
  };
}

/** The headline as the terminal table printed at the end. */
export function headlineTable(s: Summary): string {
  const h = s.headline;
  const rows: Array<[string, string]> = [
    [
      'buyers / units',
      `${h.buyers} / ${h.units}${s.options.room ? `, room ${s.options.room.admitPerSecond}/s, ${s.options.room.maxActive} inside` : ', no room'}`,
    ],
    ['checkouts opened', `${h.checkouts} (peak ${h.peakCheckoutsPerSecond}/s)`],
    ['sold', `${h.sold}${h.secondsToSellOut !== null ? ` (all sold ${h.secondsToSellOut} s after the opening)` : ''}`],
    ['refunded', `${h.refunded} (${h.paidInTimeRefunded} of them paid before their hold lapsed)`],
    ['oversold', String(h.oversold)],
    ['lost', String(h.lost)],
    ['purchase answers', `${h.purchaseAnswersPerSecond}/s, p50 ${h.purchaseP50Ms} ms, p99 ${h.purchaseP99Ms} ms`],
    ['wait for a checkout', `p50 ${h.waitForCheckout.p50} ms, p99 ${h.waitForCheckout.p99} ms (from arrival)`],
    ['longest queue', String(h.peakQueue)],
    ...(s.crowd ? crowdRows(s.crowd) : []),
    [
      'drill sockets',
      `${s.options.concurrency} for calls, as many for polls; a request waited for one p50 ${h.socketWait.p50} ms, p99 ${h.socketWait.p99} ms (left out of the latencies)`,
    ],
    [
      'drill event loop',
      `ran late p50 ${h.drillLoopDelay.p50} ms, p99 ${h.drillLoopDelay.p99} ms, at most ${h.drillLoopDelay.max} ms (inside the latencies: the drill's own share)`,
    ],
    ['duration', `${h.durationSeconds} s`],
    ['invariants', h.invariantsHeld ? 'all held' : 'FAILED'],
  ];
  const width = Math.max(...rows.map(([k]) => k.length));
  return rows.map(([k, v]) => `  ${k.padEnd(width)}  ${v}`).join('\n');
}

/** One line of what each rule stopped: `bots: bot check: missing 30, ...; humans: not stopped 160`. */
export function describeRules(r: NonNullable<Summary['rules']>): string {
  const part = (by: Record<string, number>) =>
    Object.entries(by)
      .map(([k, v]) => `${k} ${v}`)
      .join(', ');
  const perSolve = r.humansSolved ? Math.round(r.humanSolveAttempts / r.humansSolved) : 0;
  return `bots: ${part(r.bots) || 'none'}; humans: ${part(r.humans) || 'none'} (${r.humansSolved} challenges solved, ${perSolve} attempts each)`;
}
