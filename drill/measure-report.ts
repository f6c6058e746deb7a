// The measured blocks of a summary (faults, cost, Temporal actions, Stripe) as tables: drawn as text
// at the end of the run and as HTML in report.html, from the same rows.
import type { ReportedRoute } from './server-latency';
import type { Summary } from './summary';

export interface Section {
  id: string;
  title: string;
  head: string[];
  rows: Array<Array<string | number>>;
  notes: string[];
}

const seconds = (v: number | null) => (v === null ? 'not sold out' : `${v} s after the opening`);
const dash = (v: number | null | undefined, unit = '') => (v === null || v === undefined ? '—' : `${v}${unit}`);

export function measuredSections(s: Summary): Section[] {
  const sections: Section[] = [];
  if (s.faults.length) {
    const delays = s.faults.map((f) => f.delaySeconds ?? 0);
    const soldOut = s.headline.secondsToSellOut;
    sections.push({
      id: 'faults',
      title: 'Faults (seconds after the opening)',
      head: [
        'at s',
        'fault',
        'over after s',
        'checkouts set back s',
        '5xx or network answers until the next (10 s at most)',
        'what happened',
      ],
      rows: s.faults.map((f) => [
        (f.startedAt / 1000).toFixed(1),
        f.kind === 'api' || f.kind === 'worker' ? `${f.kind} (${f.target})` : f.kind,
        ((f.endedAt - f.startedAt) / 1000).toFixed(1),
        dash(f.delaySeconds),
        f.errors,
        [
          f.error ? `FAILED: ${f.error}` : f.detail,
          f.stalledSagas
            ? `${f.stalledSagas.count} sagas had a workflow task time out on it; they went on p50 ${dash(f.stalledSagas.resumedP50Seconds, ' s')}, at most ${dash(f.stalledSagas.resumedMaxSeconds, ' s')} after the kill${f.stalledSagas.notResumed ? `, ${f.stalledSagas.notResumed} not yet` : ''}`
            : '',
        ]
          .filter(Boolean)
          .join('; '),
      ]),
      notes: s.baseline
        ? [
            `time to sold out: ${seconds(soldOut)}; the same crowd without the faults (run first, on the same deployment): ${seconds(s.baseline.secondsToSellOut)}${
              soldOut !== null && s.baseline.secondsToSellOut !== null
                ? `: the faults moved it ${(soldOut - s.baseline.secondsToSellOut).toFixed(1)} s`
                : ''
            }; last checkout ${dash(s.headline.lastCheckoutSeconds, ' s')} against ${dash(s.baseline.lastCheckoutSeconds, ' s')}`,
            `"checkouts set back": how much further the checkouts fell behind the run without faults, from the fault to the next one (15 s at most); ${delays.reduce((a, b) => a + b, 0).toFixed(1)} s in all. Runs of one crowd differ by a few seconds even without faults, and their last units (a failed debit, a late payment) by more.`,
          ]
        : [
            `time to sold out: ${seconds(soldOut)}; without --no-baseline the drill runs the same crowd without the faults first and measures each fault against it`,
          ],
    });
  }
  if (s.apiTimes?.length) sections.push(apiTimesSection(s));
  if (s.cost) {
    const c = s.cost;
    sections.push({
      id: 'cost',
      title: 'CPU by kind of process',
      head: [
        'kind',
        'processes',
        'CPU-s in the drop',
        'idle CPU-s/s',
        'CPU-s for the crowd',
        'ms per sale',
        'ms per refused buyer',
      ],
      rows: [
        ...c.rows.map((r) => [
          r.kind,
          r.processes.join(' '),
          r.cpuSeconds,
          r.idlePerSecond,
          r.loadSeconds,
          dash(r.perSaleMs),
          dash(r.perRefusedMs),
        ]),
        [
          'all',
          '',
          sum(c.rows.map((r) => r.cpuSeconds)),
          sum(
            c.rows.map((r) => r.idlePerSecond),
            3,
          ),
          sum(c.rows.map((r) => r.loadSeconds)),
          dash(
            c.sales
              ? sum(
                  c.rows.map((r) => r.perSaleMs ?? 0),
                  1,
                )
              : null,
          ),
          dash(c.refused ? sum(c.rows.map((r) => r.perRefusedMs ?? 0)) : null),
        ],
      ],
      notes: [
        `${c.sales} sales, ${c.refused} refused buyers (no checkout), ${c.sagas} sagas, over ${c.windowSeconds} s; ${c.averageCores} cores busy on average; the drill's own buyers used ${c.drillCpuSeconds} CPU-s beside them`,
        '"for the crowd": CPU-s less the idle rate measured before the drop; per sale and per refused buyer each divide the whole of it (docs/capacity.md splits it).',
        ...(c.apiLanes
          ? [
              `the APIs by lane (--crowd-apis): the waiting crowd's ${c.apiLanes.crowd} CPU-s (room joins and polls, queue pages, product reads), the buyers' ${c.apiLanes.buyers} CPU-s (purchases, their reads and pages, webhooks)`,
            ]
          : []),
      ],
    });
  }
  if (s.footprint) sections.push(footprintSection(s.footprint, s.cost?.sales ?? s.headline.sold));
  if (s.temporalActions) {
    const a = s.temporalActions;
    const per = (n: number, d: number | null) => (d ? (n / d).toFixed(2) : '—');
    const sagas = a.sagas || null;
    const sales = a.perSale ? a.total / a.perSale : null;
    sections.push({
      id: 'actions',
      title: 'Temporal actions (from the histories)',
      head: ['action', 'count', 'per saga', 'per sale'],
      rows: [
        ...Object.entries(a.byType)
          .filter(([, n]) => n > 0)
          .map(([type, n]) => [type, n, per(n, sagas), per(n, sales)]),
        ['all', a.total, dash(a.perSaga), dash(a.perSale)],
      ],
      notes: [
        `${a.sagas} purchase sagas in ${a.workflows} workflow executions; peak ${a.peakPerSecond} actions in one second (Temporal Cloud's default limit: 500 a second per namespace)`,
        ...(a.versions
          ? [
              `worker versions: ${Object.entries(a.versions.byBuild)
                .map(([build, n]) => `${n} sagas ran on ${build} alone`)
                .join(', ')}; ${a.versions.moved.length} ran on more than one`,
            ]
          : []),
      ],
    });
  }
  if (s.stripe) {
    const st = s.stripe;
    const limit =
      st.accountPerSecond || st.endpointPerSecond
        ? `${st.accountPerSecond}/s for the account, ${st.endpointPerSecond}/s per endpoint`
        : 'none';
    sections.push({
      id: 'stripe',
      title: 'Stripe (the emulator)',
      head: ['endpoint', 'served', '429'],
      rows: [...st.endpoints.map((e) => [e.endpoint, e.served, e.limited]), ['all', st.served, st.limited]],
      notes: [
        `limit ${limit}; Stripe's floor (units ÷ limit) ${dash(st.floorSeconds, ' s')}; last checkout ${dash(st.lastCheckoutSeconds, ' s')} after the opening`,
        `${st.sessionsOpened} sessions opened for ${st.checkouts} checkouts; ${dash(st.callsPerSale)} Stripe calls per sale, ${dash(st.callsPerSaga)} per saga`,
      ],
    });
  }
  return sections;
}

const mb = (bytes: number) => (bytes / 2 ** 20).toFixed(1);

/** Memory and logs by kind of process, and the WAL, rows and bytes Postgres gained (issue 31, item 2). */
function footprintSection(f: NonNullable<Summary['footprint']>, sales: number): Section {
  const kinds = [...new Set([...f.memory.map((m) => m.kind), ...f.logs.map((l) => l.kind)])];
  const per = (n: number) => (sales ? (n / sales).toFixed(1) : '—');
  const notes: string[] = [];
  const pg = f.postgres;
  if (pg) {
    const byDb = pg.statementWal
      ? ` (by statements: ${Object.entries(pg.statementWal)
          .map(([db, n]) => `${db} ${mb(n)} MB`)
          .join(', ')})`
      : '';
    notes.push(`WAL written ${mb(pg.walBytes)} MB, ${per(pg.walBytes / 1024)} KB per sale${byDb}`);
    for (const [db, d] of Object.entries(pg.databases)) {
      const top = Object.entries(d.tables)
        .sort(([, a], [, b]) => b.bytes - a.bytes)
        .slice(0, 4)
        .map(([t, g]) => `${t} ${g.rows} rows ${mb(g.bytes)} MB`)
        .join(', ');
      notes.push(`${db}: ${d.rows} rows, ${mb(d.bytes)} MB gained (${per(d.bytes / 1024)} KB per sale): ${top}`);
    }
  }
  if (f.peakConnections)
    notes.push(
      `most backends at once: ${Object.entries(f.peakConnections)
        .map(([db, n]) => `${db} ${n}`)
        .join(', ')}`,
    );
  return {
    id: 'footprint',
    title: 'Memory, logs and Postgres over the drop',
    head: ['kind', 'peak resident memory MB', 'log lines', 'log MB', 'log bytes per sale'],
    rows: kinds.map((k) => {
      const log = f.logs.find((l) => l.kind === k);
      return [
        k,
        f.memory
          .filter((m) => m.kind === k)
          .map((m) => `${m.name} ${m.peakMb}`)
          .join(', ') || '—',
        log?.lines ?? 0,
        mb(log?.bytes ?? 0),
        per(log?.bytes ?? 0),
      ];
    }),
    notes,
  };
}

/**
 * Each route's time in the APIs, at the balancer (with --cluster) and as the drill saw it: what the
 * balancer adds to the APIs' time was spent between them (the kernel, an API's busy event loop);
 * what the drill adds to the balancer's, in the drill (its own event loop on the shared cores).
 */
function apiTimesSection(s: Summary): Section {
  // Every reported route, with what the buyers saw of it (the recorder's figures).
  const seen: Record<ReportedRoute, { p50: number; p99: number } | undefined> = {
    'POST /v1/products/:sku/queue': s.crowd?.joins,
    'GET /v1/queue/:ticket': s.crowd?.polls,
    'GET /v1/purchases/:id': s.crowd?.purchaseReads,
    'POST /v1/purchases': { p50: s.headline.purchaseP50Ms, p99: s.headline.purchaseP99Ms },
  };
  const pair = (b: { p50: number; p99: number } | undefined) => (b ? `${b.p50} / ${b.p99}` : '—');
  const balancer = s.balancerTimes;
  return {
    id: 'api-times',
    title: "The APIs' own time per route (their /metrics, summed over the APIs)",
    head: [
      'route',
      'answers',
      'p50 ms',
      'p99 ms',
      ...(balancer ? ['at the balancer, p50 / p99 ms'] : []),
      'as the buyers saw it, p50 / p99 ms',
    ],
    rows: s.apiTimes!.map((r) => [
      r.route,
      r.count,
      r.p50,
      r.p99,
      ...(balancer ? [pair(balancer.find((b) => b.route === r.route))] : []),
      pair(seen[r.route]),
    ]),
    notes: [
      'From Koa taking the request to its answer, interpolated within the histogram buckets (5 ms to 20 s). What the buyers saw beyond it was spent before: the balancer, the kernel queues, an API busy with other requests, the drill itself.',
      ...(balancer
        ? [
            "At the balancer: HAProxy's time from the request's first byte to the answer's last, one value per answer. Beyond it, the time was the drill's own (see its event loop in the headline).",
          ]
        : []),
    ],
  };
}

function sum(values: number[], digits = 2): number {
  return Math.round(values.reduce((a, b) => a + b, 0) * 10 ** digits) / 10 ** digits;
}

/** The sections as plain text, for the end of the run; '' when there are none. */
export function measuredText(s: Summary): string {
  return measuredSections(s)
    .map((sec) => {
      const cells = [sec.head, ...sec.rows.map((r) => r.map(String))];
      const widths = sec.head.map((_, i) => Math.max(...cells.map((r) => String(r[i] ?? '').length)));
      // The last column (often long prose) is not padded.
      const line = (r: Array<string | number>) =>
        `  ${r.map((c, i) => (i === r.length - 1 ? String(c) : String(c).padEnd(widths[i]))).join('  ')}`.trimEnd();
      return [`${sec.title}:`, ...cells.map(line), ...sec.notes.map((n) => `  ${n}`)].join('\n');
    })
    .join('\n');
}
