import client from 'prom-client';
import { metricOptions } from '../vocabulary/metrics';
import type { Db } from '../store/db';
import type { DeliveryOutcome } from '../activities/notifications';
import { deliveryCounts } from '../store/notifications';

// Buyer notifications on the worker's /metrics: the deliveries not sent, per channel and state
// (pending, being tried; dead, waiting for an operator), read from Postgres once per scrape (one grouped query),
// and this worker's delivery attempts by channel and outcome. Every worker reports the same
// gauges (the table is shared): alert on max(), not sum().

export function notificationMetrics(
  registry: client.Registry,
  db: Db,
  channels: string[],
): (channel: string, outcome: DeliveryOutcome) => void {
  new client.Gauge({
    ...metricOptions('flashsale_notifications'),
    registers: [registry],
    async collect() {
      const counts = await deliveryCounts(db, channels);
      this.reset();
      for (const c of counts) {
        this.set({ channel: c.channel, state: 'pending' }, c.pending);
        this.set({ channel: c.channel, state: 'dead' }, c.dead);
      }
    },
  });
  const deliveries = new client.Counter({
    ...metricOptions('flashsale_notification_deliveries_total'),
    registers: [registry],
  });
  // Zero from the start: a rate() over a series that appears with its first dead one misses it.
  for (const channel of channels) {
    for (const outcome of ['delivered', 'skipped', 'failed', 'dead'] as const) deliveries.inc({ channel, outcome }, 0);
  }
  return (channel, outcome) => deliveries.inc({ channel, outcome });
}
