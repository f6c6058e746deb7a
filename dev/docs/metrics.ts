import type { Metric } from '../../vocabulary/metrics';
import { cell, code, replaceGenerated, table, type Generated } from './markdown';

// The metrics table of docs/observability.md, written from the catalogue (vocabulary/metrics.ts).

const SOURCE = 'vocabulary/metrics.ts';

export function metricsTable(metrics: Record<string, Metric>): string {
  const rows = Object.entries(metrics).map(([name, m]) => [
    code(name),
    m.type,
    m.labels.map(code).join(', '),
    m.exportedBy,
    cell(m.note ? `${m.help}; ${m.note}` : m.help),
  ]);
  return table(['metric', 'type', 'labels', 'exported by', 'what it is'], rows);
}

export function metricsFiles(metrics: Record<string, Metric>): Generated[] {
  return [
    {
      file: 'docs/observability.md',
      render: (text) => replaceGenerated(text, metricsTable(metrics), 'docs/observability.md', SOURCE),
    },
  ];
}
