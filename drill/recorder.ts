// What the drill measures while it runs: every answer's latency, by route and answer, and per
// second; and the buyers' own state, which the progress display, the timeline and the report read.
import { monitorEventLoopDelay } from 'node:perf_hooks';
import type { Behaviour } from './options';

/** Where a buyer is; `done` once it has its outcome. */
export const PHASES = ['arriving', 'queued', 'admitted', 'buying', 'holding', 'settling', 'done'] as const;
export type Phase = (typeof PHASES)[number];

/** How the buyer's money went, once the emulator took it. */
export type Paid = 'card' | 'after_decline' | 'bank_debit' | 'late' | 'late_raced_expiry';

export interface BuyerRecord {
  buyerId: string;
  behaviour: Behaviour;
  /** Joined the room's pre-queue before the opening. */
  early: boolean;
  phase: Phase;
  /** Milliseconds since the drill's opening (negative for the pre-queue). */
  arrivedAt?: number;
  admittedAt?: number;
  /** When the buyer left the room's line: let in, turned away, or gone. */
  leftLineAt?: number;
  checkoutAt?: number;
  holdExpiresAt?: number;
  purchaseId?: string;
  sessionId?: string;
  paid?: Paid;
  paidAt?: number;
  /** A bank debit that failed after the session completed. */
  debitFailed?: boolean;
  posts: number;
  /** The purchase's last status as the buyer saw it (GET /v1/purchases/:id). */
  status?: string;
  refund?: { status: string; reason: string };
  /** One per buyer: the purchase's final status, or why there was no purchase. */
  outcome?: string;
  /** The last unexpected answer, for the report. */
  note?: string;
}

export interface Percentiles {
  count: number;
  p50: number;
  p90: number;
  p99: number;
  max: number;
}

export function percentiles(values: number[]): Percentiles {
  if (!values.length) return { count: 0, p50: 0, p90: 0, p99: 0, max: 0 };
  const sorted = Float64Array.from(values).sort();
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)];
  const round = (n: number) => Math.round(n * 10) / 10;
  return { count: sorted.length, p50: round(at(0.5)), p90: round(at(0.9)), p99: round(at(0.99)), max: round(at(1)) };
}

export class Recorder {
  /** ms since the opening: `Date.now() - t0`. */
  readonly t0: number;
  private readonly byAnswer = new Map<string, number[]>();
  /** Per second since the opening: the latencies of POST /v1/purchases answered in it. */
  private readonly purchaseSeconds = new Map<number, number[]>();
  /** What each request waited for one of the drill's own sockets (`--concurrency`), left out of its latency. */
  private readonly socketWaits: number[] = [];
  readonly buyers: BuyerRecord[] = [];
  /**
   * How late this process's own event loop ran (a timer due every 20 ms): a response the drill read
   * late is counted in that request's latency, so this is the drill's own share of what it reports.
   */
  private readonly loop = monitorEventLoopDelay({ resolution: 20 });

  constructor(t0: number) {
    this.t0 = t0;
  }

  /** The crowd starts (`true`) or is done: the event loop's delay is measured in between. */
  watchLoop(on: boolean): void {
    if (on) this.loop.enable();
    else this.loop.disable();
  }

  /** The drill's event-loop delay while the crowd ran, in ms. */
  loopDelay(): Percentiles {
    const ms = (ns: number) => Math.round(ns / 1e5) / 10;
    const h = this.loop;
    return {
      count: h.count,
      p50: ms(h.percentile(50)),
      p90: ms(h.percentile(90)),
      p99: ms(h.percentile(99)),
      max: ms(h.max),
    };
  }

  now(): number {
    return Date.now() - this.t0;
  }

  /** `answer` names the route and what it said: `POST /v1/purchases 409 sold-out`. */
  record(answer: string, ms: number, waitedMs = 0): void {
    this.socketWaits.push(waitedMs);
    let list = this.byAnswer.get(answer);
    if (!list) this.byAnswer.set(answer, (list = []));
    list.push(ms);
    if (answer.startsWith('POST /v1/purchases ')) {
      const second = Math.floor(this.now() / 1000);
      let s = this.purchaseSeconds.get(second);
      if (!s) this.purchaseSeconds.set(second, (s = []));
      s.push(ms);
    }
  }

  latencyByAnswer(): Array<{ answer: string } & Percentiles> {
    return [...this.byAnswer]
      .map(([answer, values]) => ({ answer, ...percentiles(values) }))
      .sort((a, b) => a.answer.localeCompare(b.answer));
  }

  /** Every latency of one route (`GET /v1/queue/:ticket`), whatever it answered. */
  latenciesOf(route: string): number[] {
    return [...this.byAnswer].filter(([answer]) => answer.startsWith(`${route} `)).flatMap(([, values]) => values);
  }

  /** What the requests waited for a drill socket: near 0 unless `--concurrency` throttled the crowd. */
  socketWait(): Percentiles {
    return percentiles(this.socketWaits);
  }

  /** Every POST /v1/purchases answer's latency, whatever it said. */
  purchaseLatencies(): number[] {
    return [...this.purchaseSeconds.values()].flat();
  }

  /** POST /v1/purchases per second: answers, p50 and p99. */
  purchaseLatencyPerSecond(): Array<{ second: number; answers: number; p50: number; p99: number }> {
    return [...this.purchaseSeconds]
      .sort(([a], [b]) => a - b)
      .map(([second, values]) => {
        const p = percentiles(values);
        return { second, answers: p.count, p50: p.p50, p99: p.p99 };
      });
  }

  phaseCounts(): Record<Phase, number> {
    const counts = Object.fromEntries(PHASES.map((p) => [p, 0])) as Record<Phase, number>;
    for (const b of this.buyers) counts[b.phase]++;
    return counts;
  }

  /** Cumulative figures of the buyers, for the live display and the timeline. */
  tally() {
    let admitted = 0;
    let checkouts = 0;
    let paid = 0;
    let confirmed = 0;
    let refunded = 0;
    let soldOut = 0;
    for (const b of this.buyers) {
      if (b.admittedAt !== undefined) admitted++;
      if (b.purchaseId) checkouts++;
      if (b.paid) paid++;
      if (b.status === 'confirmed' || b.status === 'late_confirmed') confirmed++;
      if (b.status === 'refunded') refunded++;
      if (b.outcome?.startsWith('sold_out')) soldOut++;
    }
    return { ...this.phaseCounts(), admitted, checkouts, paid, confirmed, refunded, soldOut };
  }

  outcomes(): Record<string, number> {
    const out: Record<string, number> = {};
    for (const b of this.buyers) {
      const o = b.outcome ?? 'none';
      out[o] = (out[o] ?? 0) + 1;
    }
    return out;
  }
}
