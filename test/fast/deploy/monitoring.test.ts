import fs from 'node:fs';
import path from 'node:path';
import test from 'ava';
import { parse } from 'yaml';
import { dashboardPanels, selectorsOf } from '../../helpers/promql';
import { createMetrics } from '../../../api/metrics';
import type { Db } from '../../../store/db';
import type { Gate } from '../../../store/gate';
import { notificationMetrics } from '../../../worker/notification-metrics';
import { createWorkerMetrics } from '../../../worker/telemetry';
import { METRICS } from '../../../vocabulary/metrics';
import { PAYMENT_EVENT_TYPES, PURCHASE_STATUSES, STRIPE_ENDPOINTS, STRIPE_OUTCOMES } from '../../../vocabulary';

// docs/monitoring: every metric the alert rules and the dashboard name is exported by the code, with
// label values the code can give it. (The rules checked by promtool: test/deploy/monitoring.test.ts.)

const root = path.resolve(__dirname, '../../..');
const read = (file: string) => fs.readFileSync(path.join(root, file), 'utf8');

/** Every PromQL expression of the rules and of the dashboard's panels. */
function expressions(): { where: string; expr: string }[] {
  const { groups } = parse(read('docs/monitoring/alerts.yml')) as {
    groups: { rules: { alert: string; expr: string }[] }[];
  };
  return [
    ...groups.flatMap((g) => g.rules.map((r) => ({ where: `alert ${r.alert}`, expr: r.expr }))),
    ...dashboardPanels().flatMap((p) => p.exprs.map((expr) => ({ where: `panel "${p.title}"`, expr }))),
  ];
}

/** What the service's own metrics' labels can hold, from the vocabulary the code counts them with. */
const LABEL_VALUES: Record<string, Record<string, readonly string[]>> = {
  flashsale_payment_events_total: { type: PAYMENT_EVENT_TYPES },
  flashsale_stripe_requests_total: { endpoint: STRIPE_ENDPOINTS, outcome: STRIPE_OUTCOMES },
  flashsale_purchases: { status: PURCHASE_STATUSES },
};

test('every flashsale_ metric the rules and the dashboard name is exported by the code, with label values it can have', (t) => {
  const exprs = expressions();
  t.true(exprs.length > 30, `found ${exprs.length} expressions`);
  for (const { where, expr } of exprs) {
    for (const { name, matchers } of selectorsOf(expr).filter((s) => s.name.startsWith('flashsale_'))) {
      const metric = name.replace(/_(bucket|count|sum)$/, '');
      t.true(metric in METRICS, `${where}: ${metric} is in the catalogue (vocabulary/metrics.ts)`);
      for (const { label, op, value } of matchers) {
        const known = LABEL_VALUES[metric]?.[label];
        if (!known) continue;
        // A regex matcher's alternatives, each a value the code counts under.
        for (const v of op.endsWith('~') ? value.split('|') : [value]) {
          t.true(
            known.includes(v.replace(/\\\./g, '.')),
            `${where}: ${metric}{${label}="${v}"} is a value the code counts`,
          );
        }
      }
    }
  }
});

interface Declared {
  name: string;
  help: string;
  type: string;
  labelNames: readonly string[];
}

test("each process's registry declares exactly the catalogue's metrics of that process, with its type, labels and help", (t) => {
  // Declaring reads nothing: the database and the gate are only asked at a scrape.
  const api = createMetrics({} as Db, {} as Gate).registry;
  const worker = createWorkerMetrics().registry;
  notificationMetrics(worker, {} as Db, ['log']);
  for (const [process, registry] of [
    ['api', api],
    ['worker', worker],
  ] as const) {
    // prom-client keeps what a metric was declared with on the metric itself.
    const own = (registry.getMetricsAsArray() as unknown as Declared[]).filter((m) => m.name.startsWith('flashsale_'));
    const expected = Object.entries(METRICS).filter(([, m]) => m.exportedBy === process);
    t.deepEqual(own.map((m) => m.name).sort(), expected.map(([name]) => name).sort(), process);
    for (const m of own) {
      const entry = METRICS[m.name as keyof typeof METRICS];
      t.like(
        { help: m.help, type: m.type, labels: [...m.labelNames] },
        { help: entry.help, type: entry.type, labels: [...entry.labels] },
        m.name,
      );
    }
  }
});
