// What the waiting crowd cost, as the drill's buyers saw it (issue 35): the joins, the queue polls,
// per buyer who joined and per minute waited in line, and the purchase reads of the buyers who got
// a checkout, which should stay fast while the crowd polls.
import { percentiles, type Percentiles, type BuyerRecord, type Recorder } from './recorder';

export interface CrowdFigures {
  /** POST /v1/products/:sku/queue, whatever it answered. */
  joins: Percentiles;
  /** GET /v1/queue/:ticket, whatever it answered. */
  polls: Percentiles;
  /** Buyers who joined the line. */
  inLine: number;
  /** Minutes the buyers spent in line, from their arrival to being let in or leaving. */
  minutesWaited: number;
  pollsPerBuyer: number;
  pollsPerMinuteWaited: number;
  /** GET /v1/purchases/:id: a buyer's own purchase, read while the crowd polls. */
  purchaseReads: Percentiles;
}

/** Minutes a buyer spent in the line; 0 for one that never joined it. */
export function minutesInLine(b: BuyerRecord): number {
  if (b.arrivedAt === undefined || b.leftLineAt === undefined) return 0;
  return Math.max(0, b.leftLineAt - b.arrivedAt) / 60_000;
}

export function crowdFigures(recorder: Recorder): CrowdFigures {
  const inLine = recorder.buyers.filter((b) => b.leftLineAt !== undefined);
  const minutesWaited = inLine.reduce((sum, b) => sum + minutesInLine(b), 0);
  const polls = percentiles(recorder.latenciesOf('GET /v1/queue/:ticket'));
  const round = (n: number) => Math.round(n * 10) / 10;
  return {
    joins: percentiles(recorder.latenciesOf('POST /v1/products/:sku/queue')),
    polls,
    inLine: inLine.length,
    minutesWaited: round(minutesWaited),
    pollsPerBuyer: inLine.length ? round(polls.count / inLine.length) : 0,
    pollsPerMinuteWaited: minutesWaited > 0 ? round(polls.count / minutesWaited) : 0,
    purchaseReads: percentiles(recorder.latenciesOf('GET /v1/purchases/:id')),
  };
}

/** The crowd's rows of the terminal table. */
export function crowdRows(c: CrowdFigures): Array<[string, string]> {
  return [
    ['room joins', `${c.joins.count}, p50 ${c.joins.p50} ms, p99 ${c.joins.p99} ms`],
    [
      'queue polls',
      `${c.polls.count}: ${c.pollsPerBuyer} per buyer in line, ${c.pollsPerMinuteWaited} per minute waited (${c.minutesWaited} buyer-minutes); p99 ${c.polls.p99} ms`,
    ],
    ['purchase reads', `${c.purchaseReads.count}, p50 ${c.purchaseReads.p50} ms, p99 ${c.purchaseReads.p99} ms`],
  ];
}
