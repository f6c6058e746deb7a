import client from 'prom-client';
import type { Db } from '../store/db';
import { countByStatus } from '../store/purchases';

export type Metrics = ReturnType<typeof createMetrics>;

/** Prometheus metrics of one API process, on its own registry (several apps can live in one test process). */
export function createMetrics(db: Db) {
  const registry = new client.Registry();
  client.collectDefaultMetrics({ register: registry, prefix: 'flashsale_' });
  return {
    registry,
    purchaseRequests: new client.Counter({
      name: 'flashsale_purchase_requests_total',
      help: 'POST /v1/purchases answers by outcome',
      labelNames: ['outcome'] as const,
      registers: [registry],
    }),
    checkoutSeconds: new client.Histogram({
      name: 'flashsale_purchase_checkout_seconds',
      help: 'Time from POST /v1/purchases to an open Checkout Session (hold taken, session created)',
      buckets: [0.025, 0.05, 0.1, 0.2, 0.4, 0.8, 1.6, 3.2, 6.4],
      registers: [registry],
    }),
    webhookEvents: new client.Counter({
      name: 'flashsale_webhook_events_total',
      help: 'Stripe webhook deliveries by result',
      labelNames: ['result'] as const,
      registers: [registry],
    }),
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
