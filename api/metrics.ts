import client from 'prom-client';
import type { Db } from '../store/db';
import type { Gate } from '../store/gate';
import type { Admitter } from '../store/admitter';
import { countByStatus } from '../store/purchases';
import { roomStats, type RoomStats } from '../store/room';

export type Metrics = ReturnType<typeof createMetrics>;

/** Prometheus metrics of one API process, on its own registry (several apps can live in one test process). */
export function createMetrics(db: Db, gate: Gate, admitter?: Pick<Admitter, 'isLeader'>) {
  const registry = new client.Registry();
  client.collectDefaultMetrics({ register: registry, prefix: 'flashsale_' });
  const counter = (name: string, help: string, labelNames: string[] = []) =>
    new client.Counter({ name, help, labelNames, registers: [registry] });
  const gateView = (name: string, help: string, pick: (v: ReturnType<Gate['views']>[number]) => number) =>
    new client.Gauge({
      name,
      help,
      labelNames: ['sku'],
      registers: [registry],
      collect() {
        this.reset();
        for (const v of gate.views()) this.set({ sku: v.sku }, pick(v));
      },
    });
  const roomGauge = (name: string, help: string, pick: (r: RoomStats) => number) =>
    new client.Gauge({
      name,
      help,
      labelNames: ['sku'],
      registers: [registry],
      async collect() {
        const rooms = await roomStats(db);
        this.reset();
        for (const r of rooms) this.set({ sku: r.sku }, pick(r));
      },
    });
  return {
    registry,
    // The waiting room, from its record: the same figures on every API process.
    roomWaiting: roomGauge('flashsale_room_waiting', 'Waiting-room tickets not admitted yet', (r) => r.waiting),
    roomAdmitted: roomGauge('flashsale_room_admitted', 'Waiting-room tickets admitted so far', (r) => r.admitted),
    roomActive: roomGauge(
      'flashsale_room_active',
      'Admitted buyers inside now (not bought, not expired)',
      (r) => r.active,
    ),
    roomState: new client.Gauge({
      name: 'flashsale_room_state',
      help: 'Waiting-room state: 1 for the state the room is in',
      labelNames: ['sku', 'state'],
      registers: [registry],
      async collect() {
        const rooms = await roomStats(db);
        this.reset();
        for (const r of rooms) this.set({ sku: r.sku, state: r.soldOut ? 'sold_out' : r.state }, 1);
      },
    }),
    roomAdmitter: new client.Gauge({
      name: 'flashsale_room_admitter',
      help: "1 while this API process is the waiting rooms' admitter (one process of all holds the lock)",
      registers: [registry],
      collect() {
        this.set(admitter?.isLeader() ? 1 : 0);
      },
    }),
    // The funnel, in order: gate answers, sagas started, holds taken or refused, sessions opened, paid, lapsed.
    gateAnswers: counter('flashsale_gate_answers_total', 'POST /v1/purchases admissions by gate outcome', ['outcome']),
    sagasStarted: counter('flashsale_sagas_started_total', 'Purchase sagas started by this API process'),
    holdsRefused: counter('flashsale_holds_refused_total', 'New sagas whose hold step refused', ['rejection']),
    sessionsOpened: counter(
      'flashsale_sessions_opened_total',
      'New sagas that took a hold and opened a Checkout Session',
    ),
    paymentEvents: counter('flashsale_payment_events_total', 'Stripe events handed to sagas, by type', ['type']),
    webhookEvents: counter('flashsale_webhook_events_total', 'Stripe webhook deliveries by result', ['result']),
    checkoutSeconds: new client.Histogram({
      name: 'flashsale_purchase_checkout_seconds',
      help: 'Time from POST /v1/purchases to an open Checkout Session (hold taken, session created)',
      buckets: [0.025, 0.05, 0.1, 0.2, 0.4, 0.8, 1.6, 3.2, 6.4],
      registers: [registry],
    }),
    gateRemaining: gateView(
      'flashsale_gate_remaining_units',
      'Units the gate believes can still be had',
      (v) => v.remaining,
    ),
    gateHeld: gateView('flashsale_gate_held_units', 'Units in active holds, as the gate last read them', (v) => v.held),
    gateInFlight: gateView(
      'flashsale_gate_in_flight_units',
      'Units under permits whose hold is not yet in the view',
      (v) => v.inFlight,
    ),
    purchasesByStatus: new client.Gauge({
      name: 'flashsale_purchases',
      help: 'Purchases by current status (from the purchase records)',
      labelNames: ['status'] as const,
      registers: [registry],
      async collect() {
        const rows = await countByStatus(db);
        this.reset();
        for (const r of rows) this.set({ status: r.status }, r.n);
      },
    }),
  };
}
