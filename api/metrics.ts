import client from 'prom-client';
import { metricOptions, type MetricName } from '../vocabulary/metrics';
import type { Db } from '../store/db';
import type { Gate } from '../store/gate';
import type { Admitter } from '../store/admitter';
import { disputeStats } from '../store/disputes';
import { countByStatus } from '../store/purchases';
import { roomStats, type RoomStats } from '../store/room';
import { lineStats, type LineStats } from '../store/checkout-line';
import { DISPUTE_NEEDS_RESPONSE_STATUSES, PURCHASE_STATUSES } from '../vocabulary';

export type Metrics = ReturnType<typeof createMetrics>;

/** How old the purchases-by-status counts may get before a scrape has them counted again. */
export const STATUS_COUNT_MAX_AGE_MS = 15_000;
/** The gauges of one scrape share one read of the rooms' counts, and one of the checkout line. */
const ROOM_STATS_MAX_AGE_MS = 1_000;

/**
 * Prometheus metrics of one API process, on its own registry (several apps can live in one test
 * process). Node's process metrics keep their standard names (`process_*`, `nodejs_*`), which stock
 * dashboards expect; the service's own carry the `flashsale_` prefix.
 */
export function createMetrics(
  db: Db,
  gate: Gate,
  opts: { statusMaxAgeMs?: number; admitter?: Pick<Admitter, 'isLeader'> } = {},
) {
  const admitter = opts.admitter;
  const registry = new client.Registry();
  client.collectDefaultMetrics({ register: registry });
  // The purchases-by-status GROUP BY runs at most every STATUS_COUNT_MAX_AGE_MS (answered stale meanwhile),
  // not on each scrape of each replica; the rooms' counts once per scrape for all their gauges.
  const statusCounts = sharedRead(() => countByStatus(db), opts.statusMaxAgeMs ?? STATUS_COUNT_MAX_AGE_MS, true);
  const disputes = sharedRead(() => disputeStats(db), opts.statusMaxAgeMs ?? STATUS_COUNT_MAX_AGE_MS, true);
  const rooms = sharedRead(() => roomStats(db), ROOM_STATS_MAX_AGE_MS, false);
  const line = sharedRead(() => lineStats(db), ROOM_STATS_MAX_AGE_MS, false);
  const counter = (name: MetricName) => new client.Counter({ ...metricOptions(name), registers: [registry] });
  const gateView = (name: MetricName, pick: (v: ReturnType<Gate['views']>[number]) => number) =>
    new client.Gauge({
      ...metricOptions(name),
      registers: [registry],
      collect() {
        this.reset();
        for (const v of gate.views()) this.set({ sku: v.sku }, pick(v));
      },
    });
  const roomGauge = (name: MetricName, pick: (r: RoomStats) => number) =>
    new client.Gauge({
      ...metricOptions(name),
      registers: [registry],
      async collect() {
        const { value } = await rooms();
        this.reset();
        for (const r of value) this.set({ sku: r.sku }, pick(r));
      },
    });
  const lineGauge = (name: MetricName, pick: (l: LineStats) => number) =>
    new client.Gauge({
      ...metricOptions(name),
      registers: [registry],
      async collect() {
        this.set(pick((await line()).value));
      },
    });
  return {
    registry,
    // The line for Checkout Sessions, from its record (store/checkout-line.ts): the same on every API process.
    lineWaiting: lineGauge('flashsale_checkout_line_waiting', (l) => l.waiting),
    lineSeconds: lineGauge('flashsale_checkout_line_seconds', (l) => l.untilLastSlotSeconds),
    lineOldestSlot: lineGauge('flashsale_checkout_line_oldest_slot_seconds', (l) => l.oldestSlotSeconds),
    lineShortestHold: lineGauge('flashsale_checkout_line_shortest_hold_seconds', (l) => l.shortestHoldSeconds ?? 0),
    // The waiting room, from its record: the same figures on every API process.
    roomWaiting: roomGauge('flashsale_room_waiting', (r) => r.waiting),
    roomAdmitted: roomGauge('flashsale_room_admitted', (r) => r.admitted),
    roomActive: roomGauge('flashsale_room_active', (r) => r.active),
    roomState: new client.Gauge({
      ...metricOptions('flashsale_room_state'),
      registers: [registry],
      async collect() {
        const { value } = await rooms();
        this.reset();
        for (const r of value) this.set({ sku: r.sku, state: r.soldOut ? 'sold_out' : r.state }, 1);
      },
    }),
    roomAdmitter: new client.Gauge({
      ...metricOptions('flashsale_room_admitter'),
      registers: [registry],
      collect() {
        this.set(admitter?.isLeader() ? 1 : 0);
      },
    }),
    // The funnel, in order: gate answers, sagas started, holds refused, paid (sessions opened: the worker's).
    gateAnswers: counter('flashsale_gate_answers_total'),
    sagasStarted: counter('flashsale_sagas_started_total'),
    holdsRefused: counter('flashsale_holds_refused_total'),
    paymentEvents: counter('flashsale_payment_events_total'),
    // Paid: a completed session paid at once, or a delayed payment that succeeded (vocabulary `bringsMoney`).
    paymentsReceived: counter('flashsale_payments_received_total'),
    webhookEvents: counter('flashsale_webhook_events_total'),
    gateRemaining: gateView('flashsale_gate_remaining_units', (v) => v.remaining),
    gateHeld: gateView('flashsale_gate_held_units', (v) => v.held),
    gateInFlight: gateView('flashsale_gate_in_flight_units', (v) => v.inFlight),
    httpSeconds: new client.Histogram({
      ...metricOptions('flashsale_http_request_duration_seconds'),
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20],
      registers: [registry],
    }),
    purchasesByStatus: new client.Gauge({
      ...metricOptions('flashsale_purchases'),
      registers: [registry],
      async collect() {
        const counts = await statusCounts();
        this.reset();
        // Every status, 0 where none: a healthy "needs attention" reads 0, not no data.
        for (const status of PURCHASE_STATUSES) this.set({ status }, 0);
        for (const r of counts.value) this.set({ status: r.status }, r.n);
      },
    }),
    purchasesCountedAt: new client.Gauge({
      ...metricOptions('flashsale_purchases_counted_at_seconds'),
      registers: [registry],
      async collect() {
        this.set((await statusCounts()).at / 1000);
      },
    }),
    disputesByStatus: new client.Gauge({
      ...metricOptions('flashsale_disputes'),
      registers: [registry],
      async collect() {
        const stats = await disputes();
        this.reset();
        // The open ones always, 0 where none: an alert's "none waits" reads 0, not no data.
        for (const status of DISPUTE_NEEDS_RESPONSE_STATUSES) this.set({ status }, 0);
        for (const r of stats.value.byStatus) this.set({ status: r.status }, r.n);
      },
    }),
    disputeResponseDue: new client.Gauge({
      ...metricOptions('flashsale_dispute_response_due_timestamp_seconds'),
      registers: [registry],
      async collect() {
        this.set((await disputes()).value.nextDueBy ?? 0);
      },
    }),
  };
}

interface Read<T> {
  value: T;
  at: number;
}

/**
 * One read shared by every caller, at most once every `maxAgeMs` and never twice at once. `stale`:
 * a caller after that age gets the last read at once and starts a new one in the background (only
 * the very first waits; a failed read keeps the last one); otherwise it waits for the new read.
 */
function sharedRead<T>(read: () => Promise<T>, maxAgeMs: number, stale: boolean): () => Promise<Read<T>> {
  let last: Read<T> | undefined;
  let running: Promise<Read<T>> | undefined;
  const again = () =>
    (running ??= read()
      .then((value) => (last = { value, at: Date.now() }))
      .finally(() => (running = undefined)));
  return async () => {
    if (last && Date.now() - last.at < maxAgeMs) return last;
    if (!last || !stale) return again();
    again().catch(() => {});
    return last;
  };
}
