import fs from 'node:fs';
import path from 'node:path';

// The series selectors of the PromQL in docs/monitoring (the dashboard's panels, the alert rules),
// and the samples of a real /metrics scrape they select: enough to tell a query that reads nothing.

export interface Matcher {
  label: string;
  op: '=' | '!=' | '=~' | '!~';
  value: string;
}

export interface Selector {
  /** The metric, as the query names it (a histogram's `_bucket`, `_count`, `_sum` included). */
  name: string;
  matchers: Matcher[];
}

const SELECTOR = /\b([a-z_][a-z0-9_]*)\{([^}]*)\}|\b((?:flashsale|temporal)_[a-z0-9_]+)\b/g;
const MATCHER = /(\w+)\s*(=~|!~|!=|=)\s*"((?:[^"\\]|\\.)*)"/g;

/** The selectors of one expression (the service's and the Temporal SDK's metrics). */
export function selectorsOf(expr: string): Selector[] {
  return [...expr.matchAll(SELECTOR)]
    .filter((m) => /^(flashsale|temporal)_/.test(m[1] ?? m[3]))
    .map((m) => ({
      name: m[1] ?? m[3],
      matchers: [...(m[2] ?? '').matchAll(MATCHER)].map(([, label, op, value]) => ({
        label,
        op: op as Matcher['op'],
        // PromQL string escapes: `\\.` in the query is the regex `\.`.
        value: value.replace(/\\(.)/g, '$1'),
      })),
    }));
}

function matches(m: Matcher, actual: string): boolean {
  if (m.op === '=') return actual === m.value;
  if (m.op === '!=') return actual !== m.value;
  const full = new RegExp(`^(?:${m.value})$`).test(actual);
  return m.op === '=~' ? full : !full;
}

/** The values of the samples of a Prometheus text scrape that `s` selects. */
export function selectedValues(scrape: string, s: Selector): number[] {
  const values: number[] = [];
  for (const line of scrape.split('\n')) {
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)/.exec(line);
    if (!m || m[1] !== s.name) continue;
    const labels = Object.fromEntries(
      [...(m[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)].map(([, k, v]) => [k, v]),
    );
    if (s.matchers.every((x) => matches(x, labels[x.label] ?? ''))) values.push(Number(m[3]));
  }
  return values;
}

interface Dashboard {
  panels: { title: string; targets?: { expr: string }[] }[];
}

/** The dashboard's panels and their queries (docs/monitoring/grafana-dashboard.json). */
export function dashboardPanels(): { title: string; exprs: string[] }[] {
  const file = path.resolve(__dirname, '../../docs/monitoring/grafana-dashboard.json');
  const dashboard = JSON.parse(fs.readFileSync(file, 'utf8')) as Dashboard;
  return dashboard.panels.map((p) => ({ title: p.title, exprs: (p.targets ?? []).map((t) => t.expr) }));
}
