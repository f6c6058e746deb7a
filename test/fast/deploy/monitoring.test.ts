import fs from 'node:fs';
import path from 'node:path';
import test from 'ava';
import { parse } from 'yaml';
import { dashboardPanels, selectorsOf } from '../../helpers/promql';
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
  const sources = ['api/metrics.ts', 'worker/telemetry.ts', 'worker/outbox-metrics.ts'].map(read).join('\n');
  const exprs = expressions();
  t.true(exprs.length > 30, `found ${exprs.length} expressions`);
  for (const { where, expr } of exprs) {
    for (const { name, matchers } of selectorsOf(expr).filter((s) => s.name.startsWith('flashsale_'))) {
      const metric = name.replace(/_(bucket|count|sum)$/, '');
      t.true(sources.includes(`'${metric}'`), `${where}: ${metric} is declared in the code`);
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
