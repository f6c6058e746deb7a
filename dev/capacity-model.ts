// The capacity model of docs/capacity.md (issue 31, item 2): what a drop of N units and M buyers needs,
// from the constants measured on this repository's benches and cluster drills (each says where it
// comes from), and the waiting room's poll rule as the API answers it (api/next-poll.ts). `npm run
// capacity` prints it (dev/capacity.ts); the fast tier checks the doc's worked example against it.
import { inLine, MAX_POLL_SECONDS } from '../api/next-poll';
import type { RoomSnapshot } from '../store/room-cache';
import { DEFAULT_HOLD_GRACE_SECONDS } from '../vocabulary/limits';

/**
 * What was measured, and where (docs/capacity.md, "Measured"): bench:room of 2026-12-04 16:59 and 17:00
 * (a quiet machine, load about 1; the mean of the two runs) for the crowd's answers; the cluster drills
 * C (1,000 buyers, 300 units, hold 60 s) and D
 * (3,000 buyers, 300 units, hold 120 s), both with a room of 100/s and 200 inside and --crowd-apis 1
 * (load 15 to 28), for the rest: a figure of both is solved from the two. Per saga unless named.
 */
export const MEASURED = {
  /** bench:room, API CPU per answer, ms: a join, a poll of a waiting ticket, a render of its queue page. */
  joinApiMs: 0.24,
  pollApiMs: 0.06,
  pageApiMs: 0.54,
  /**
   * CPU-s a second of an open room beyond its answers (the admitter's step every ROOM_ADMIT_TICK_MS,
   * the room cache, the gate's reads): the crowd's API lane less its answers at the bench's cost (C
   * 0.036, D 0.037); Postgres and the Temporal server, solved with the per-saga figures from C and D.
   */
  roomCores: { api: 0.037, postgres: 0.04, temporal: 0.007 } as Record<string, number>,
  /** CPU per saga by kind of process, ms (the APIs: the buyers' lane, 10.9 and 10.95 CPU-s). */
  sagaCpuMs: { api: 31, worker: 84, temporal: 87, postgres: 83, emulator: 5.5 } as Record<string, number>,
  /** HAProxy, per request it forwarded (C 0.155, D 0.089), ms. */
  balancerRequestMs: 0.12,
  /** Temporal Cloud actions (C 10.69, D 9.89), Stripe calls (1.11, 1.15), sessions opened (1.0). */
  temporalActions: 10.27,
  stripeCalls: 1.13,
  sessions: 1.0,
  /** Sagas per sale with the drill's mix of buyers (343 and 364 for 300: abandons, failed debits, late payers). */
  sagasPerSale: 1.18,
  /** WAL per saga, bytes, by statements: the app's (a join adds 1,300); Temporal's two (C 178 KB, D 177 KB). */
  walBytes: { app: 9_700, temporal: 177_000 },
  walPerJoin: 1_300,
  /** Bytes and rows a saga leaves in the Temporal server's databases until its retention ends (C 84 KB, D 71 KB). */
  temporalBytes: 77_000,
  temporalRows: 21.5,
  /** Bytes and rows a saga leaves in the app's database (purchase, hold, ledger, notification, webhooks). */
  appBytes: 5_400,
  appRows: 6.2,
  /** Bytes a buyer's place in a room leaves (room_tickets and its indexes; D: 3,000 places). */
  ticketBytes: 550,
  /** Peak resident memory of one process, MB (the largest of C and D; Postgres: D's, with every backend). */
  memoryMb: { api: 175, worker: 545, temporal: 239, postgres: 440 } as Record<string, number>,
  /** At `info`: the workers' log bytes per saga, the APIs' per saga and per buyer who joins a room. */
  logBytes: { workerPerSaga: 3_750, apiPerSaga: 790, apiPerBuyer: 320 },
};

/** Connections each process opens (docs/deploying.md, Scaling out; dev/temporal-server.ts for Temporal's). */
export const CONNECTIONS = { api: 30 + 1 + 1, worker: 105, temporal: 20 + 10 };

export interface Drop {
  units: number;
  buyers: number;
  holdSeconds: number;
  /** Seconds over which every buyer joins (the peak is buyers ÷ this). */
  arrivalSeconds: number;
  /** STRIPE_MAX_SESSIONS_PER_SECOND. */
  sessionBudget: number;
  /** STRIPE_MAX_REQUESTS_PER_SECOND. */
  requestBudget: number;
  /** The room's admitPerSecond; undefined: the budget's pace. */
  roomRate?: number;
  /** Temporal Cloud's actions a second for the namespace; undefined when self-hosted. */
  temporalActionsPerSecond?: number;
  /** Share of the waiting buyers on the queue page (a poll and a render a refresh), the rest JSON clients. */
  pageShare: number;
  /** Refused buyers stay until the room closes (true) or leave when told sold out for now. */
  stay: boolean;
  /** Buyers still waiting leave this many seconds after the opening (the drill's deadline). */
  leaveAt?: number;
  /** Buyers ask again after this share of `nextPollSeconds` (1; the drill's buyers 0.9 on average). */
  pollFactor?: number;
  apis: number;
  workers: number;
}

export interface Sizing {
  pace: number;
  boundBy: string;
  sagas: number;
  refused: number;
  /** Seconds from the opening: every unit spoken for (sold out for now), the last unit sold. */
  spokenForAt: number;
  soldOutAt: number;
  crowd: {
    /** Seconds the room is open: until the last unit sells and its grace ends. */
    openFor: number;
    buyerMinutes: number;
    polls: number;
    renders: number;
    pollsPerBuyerMinute: number;
    /** The API's answers and its open room, the balancer, and the open room's Postgres and Temporal. */
    cpuSeconds: number;
  };
  /** The first minutes: the crowd arriving and polling, the sale handing out at its pace, the room open. */
  peak: { joinsPerSecond: number; pollsPerSecond: number; apiCores: number; cores: number };
  sale: {
    cpuSeconds: Record<string, number>;
    cores: number;
    actions: number;
    actionsPerSecond: number;
    stripeCalls: number;
  };
  postgres: { connections: number; walMb: number; appMb: number; temporalMb: number; temporalRows: number };
  memoryGb: number;
  logMb: number;
}

/** A room's copy of its row, as the API answers polls from it: a room admitting `rate` a second. */
function moving(rate: number): RoomSnapshot {
  return {
    room: {
      sku: 'model',
      state: 'open',
      soldOut: false,
      admitPerSecond: rate,
      maxActive: Number.MAX_SAFE_INTEGER,
      sessionSeconds: 300,
      opensAt: null,
      shuffled: true,
      prequeueSize: 0,
      nextPlace: 0,
      serving: 0,
    },
    steps: [],
    readAt: 0,
  };
}

/**
 * Polls of one buyer who follows the answers (`nextPollSeconds`, times `factor`), `ahead` places from
 * the head of a line moving at `rate` a second in a room told to admit `roomRate` a second, over at
 * most `seconds`: until the turn comes or the time is up.
 */
export function pollsInLine(ahead: number, rate: number, seconds: number, roomRate = rate, factor = 1): number {
  const room = moving(roomRate);
  let t = 0;
  let polls = 0;
  for (;;) {
    const left = ahead - rate * t;
    if (left <= 0 || t > seconds) return polls;
    polls++;
    // Each poll is answered from a copy of the room just read (the API's is at most ROOM_REFRESH_MS old).
    t += factor * inLine({ ...room, readAt: Date.now() }, Math.ceil(left), left / rate, roomRate).nextPollSeconds;
  }
}

/** A buyer beyond reach of every unit that may come back asks at the longest interval (api/next-poll.ts). */
export const SOLD_OUT_FOR_NOW_POLL_SECONDS = MAX_POLL_SECONDS;

/** Mean of f over `n` buyers spread evenly between places `from` and `to`. */
function overPlaces(from: number, to: number, f: (place: number) => number, samples = 50): number {
  let sum = 0;
  for (let i = 0; i < samples; i++) sum += f(from + ((to - from) * (i + 0.5)) / samples);
  return sum / samples;
}

export function size(d: Drop): Sizing {
  const m = MEASURED;
  const limits: Array<[string, number]> = [
    ['the session budget', d.sessionBudget / m.sessions],
    ['the Stripe request budget', d.requestBudget / m.stripeCalls],
    ...(d.roomRate ? [['the room', d.roomRate] as [string, number]] : []),
    ...(d.temporalActionsPerSecond
      ? [['Temporal Cloud', d.temporalActionsPerSecond / m.temporalActions] as [string, number]]
      : []),
  ];
  const [boundBy, pace] = limits.reduce((a, b) => (b[1] < a[1] ? b : a));
  const sagas = Math.round(d.units * m.sagasPerSale);
  const refused = Math.max(0, d.buyers - sagas);
  // Every unit is spoken for once the first wave is in; an unpaid hold gives its unit back at its end,
  // a share (1 - 1/sagasPerSale) of each wave, until less than a unit is left.
  const spokenForAt = d.units / pace;
  const lapsing = 1 - 1 / m.sagasPerSale;
  const waves = Math.log(d.units) / Math.log(1 / lapsing);
  // One wave more than the lapses alone: a returned unit waits for the admitter, the next buyer's
  // poll and purchase, and a late payer's retake (drills C and D sold out 0.5 and 1.3 waves later).
  const soldOutAt = spokenForAt + (waves + 1) * d.holdSeconds;
  const joinedAt = d.arrivalSeconds / 2;
  const factor = d.pollFactor ?? 1;
  const told = d.roomRate ?? pace;
  // Refused buyers: in a moving line until every unit is spoken for, then told sold out for now and
  // asking every SOLD_OUT_FOR_NOW_POLL_SECONDS until the room closes (or they leave).
  const moveFor = Math.max(0, spokenForAt - joinedAt);
  const refusedPolls = overPlaces(sagas, d.buyers, (p) => pollsInLine(p - sagas / 2, pace, moveFor, told, factor));
  const closesAt = Math.min(soldOutAt + DEFAULT_HOLD_GRACE_SECONDS, d.leaveAt ?? Infinity);
  const after = d.stay ? Math.max(0, closesAt - Math.max(spokenForAt, joinedAt)) : 0;
  const refusedEach = refusedPolls + Math.ceil(after / (factor * SOLD_OUT_FOR_NOW_POLL_SECONDS)) + 1;
  const admittedEach = overPlaces(0, sagas, (p) => pollsInLine(p, pace, Infinity, told, factor));
  const polls = refused * refusedEach + sagas * admittedEach;
  const buyerMinutes = (refused * (moveFor + after) + sagas * (sagas / pace / 2)) / 60;
  const renders = polls * d.pageShare;
  const requests = d.buyers + polls + renders;
  // The room is open until the last unit sells, whoever still waits.
  const openFor = soldOutAt + DEFAULT_HOLD_GRACE_SECONDS;
  const roomCores = Object.values(m.roomCores).reduce((a, b) => a + b, 0);
  const crowdCpu =
    openFor * roomCores +
    (d.buyers * m.joinApiMs + polls * m.pollApiMs + renders * m.pageApiMs + requests * m.balancerRequestMs) / 1000;
  const joinsPerSecond = d.buyers / d.arrivalSeconds;
  // By the end of the arrival every buyer polls about once a poll interval (far ones: the longest).
  const pollsPerSecond = d.buyers / Math.min(SOLD_OUT_FOR_NOW_POLL_SECONDS, Math.max(1, spokenForAt));
  const apiCores = (joinsPerSecond * m.joinApiMs + pollsPerSecond * (m.pollApiMs + d.pageShare * m.pageApiMs)) / 1000;
  const cpuSeconds = Object.fromEntries(Object.entries(m.sagaCpuMs).map(([k, ms]) => [k, (sagas * ms) / 1000]));
  const saleCpu = Object.values(cpuSeconds).reduce((a, b) => a + b, 0);
  const mb = (bytes: number) => bytes / 2 ** 20;
  return {
    pace,
    boundBy,
    sagas,
    refused,
    spokenForAt,
    soldOutAt,
    crowd: {
      openFor,
      buyerMinutes,
      polls,
      renders,
      pollsPerBuyerMinute: buyerMinutes ? polls / buyerMinutes : 0,
      cpuSeconds: crowdCpu,
    },
    peak: {
      joinsPerSecond,
      pollsPerSecond,
      apiCores,
      cores:
        apiCores +
        ((joinsPerSecond + pollsPerSecond * (1 + d.pageShare)) * m.balancerRequestMs) / 1000 +
        (saleCpu / sagas) * pace +
        roomCores,
    },
    sale: {
      cpuSeconds,
      cores: (saleCpu / sagas) * pace,
      actions: sagas * m.temporalActions,
      actionsPerSecond: pace * m.temporalActions,
      stripeCalls: sagas * m.stripeCalls,
    },
    postgres: {
      connections: d.apis * CONNECTIONS.api + d.workers * CONNECTIONS.worker + CONNECTIONS.temporal,
      walMb: mb(sagas * (m.walBytes.app + m.walBytes.temporal) + d.buyers * m.walPerJoin),
      appMb: mb(sagas * m.appBytes + d.buyers * m.ticketBytes),
      temporalMb: mb(sagas * m.temporalBytes),
      temporalRows: sagas * m.temporalRows,
    },
    memoryGb:
      (d.apis * m.memoryMb.api + d.workers * m.memoryMb.worker + m.memoryMb.temporal + m.memoryMb.postgres) / 1024,
    logMb: mb(sagas * (m.logBytes.workerPerSaga + m.logBytes.apiPerSaga) + d.buyers * m.logBytes.apiPerBuyer),
  };
}
