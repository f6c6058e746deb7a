import os from 'node:os';
import type { Checkouts } from './crowd-checkouts';

/** The table `npm run bench:crowd` prints (stdout), from what bench/crowd.ts measured and checked. */

export interface Answer {
  cls: string;
  ms: number;
  purchaseId?: string;
  final?: unknown;
}

export interface Phase {
  name: string;
  answers: Answer[];
  seconds: number;
}

/** Runs `count` calls of `once`, `concurrency` at a time, as one phase of a benchmark. */
export type Drive = (
  name: string,
  count: number,
  concurrency: number,
  once: (n: number) => Promise<Omit<Answer, 'ms'>>,
) => Promise<Phase>;

export type Check = [what: string, ok: boolean];

export interface CrowdResult {
  buyers: number;
  units: number;
  concurrency: number;
  respondAsync: boolean;
  base: string;
  describe: string;
  sku: string;
  healthz: Phase;
  crowd: Phase;
  /** API counters that moved during the crowd (/metrics). */
  counters: string[];
  sagas?: { started: number; running: number };
  /** Temporal alone: as many saga-shaped workflow starts as there are units (bench/crowd-floor.ts). */
  floor?: Phase;
  rows?: Array<{ status: string; rejection: string | null; n: number }>;
  checkouts?: Checkouts;
  /** About the answers buyers got: reported, not failing the run. */
  notes: Check[];
  /** Stock exact: these decide the exit code. */
  checks: Check[];
}

export function percentile(sorted: number[], p: number): number {
  if (!sorted.length) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

export function latencies(answers: Answer[]): { n: number; p50: number; p99: number } {
  const ms = answers.map((a) => a.ms).sort((a, b) => a - b);
  return { n: ms.length, p50: percentile(ms, 50), p99: percentile(ms, 99) };
}

export const fmt = (x: number, digits = 0): string => (Number.isFinite(x) ? x.toFixed(digits) : '-');

export function countBy<T>(xs: T[], key: (x: T) => string): Map<string, number> {
  const m = new Map<string, number>();
  for (const x of xs) m.set(key(x), (m.get(key(x)) ?? 0) + 1);
  return m;
}

/** What the run found: notes on the answers buyers got (reported), and the stock checks (the exit code). */
export function verdicts(v: {
  units: number;
  sku: string;
  respondAsync: boolean;
  crowd: Phase;
  checkouts?: Checkouts;
  /**
   * Purchases whose buyer got no winner's answer (undefined: no database): the units they hold, and
   * their rows left in `holding` without a hold (no saga took one).
   */
  untold?: { units: number; stranded: number };
  product: { status: number; body: Record<string, unknown> };
  /** reconcile()'s differences (undefined: no database). */
  diffs?: unknown[];
}): { notes: Check[]; checks: Check[] } {
  const won = v.respondAsync ? '202' : '201';
  const winners = v.crowd.answers.filter((a) => a.cls === 'winner');
  const other = v.crowd.answers.filter((a) => a.cls !== 'winner' && a.cls !== 'sold-out');
  const distinct = new Set(winners.map((a) => a.purchaseId)).size;
  const notes: Check[] = [
    [
      `winners == units (${winners.length} of ${v.units}, ${distinct} distinct purchase ids)`,
      winners.length === v.units && distinct === winners.length,
    ],
    [`every buyer answered ${won} or 409 sold-out (${other.length} other)`, other.length === 0],
  ];
  const c = v.checkouts;
  if (c)
    notes.push([`every accepted purchase got a checkout URL (${c.ready} of ${c.accepted})`, c.ready === c.accepted]);
  if (v.untold) {
    notes.push([`units held by purchases whose buyer got no ${won}: ${v.untold.units}`, v.untold.units === 0]);
    notes.push([
      `purchase rows left in holding without a hold, buyer got no ${won}: ${v.untold.stranded}`,
      v.untold.stranded === 0,
    ]);
  }

  const checks: Check[] = [];
  const p = v.product.body as { total?: number; available?: number; held?: number; sold?: number; soldOut?: boolean };
  if (v.product.status === 200) {
    checks.push([
      `product: total ${p.total}, available ${p.available}, held ${p.held}, sold ${p.sold}: held + sold == ${v.units}`,
      (p.held ?? NaN) + (p.sold ?? NaN) === v.units && p.total === v.units,
    ]);
    checks.push([`product: available == 0 (soldOut ${p.soldOut})`, p.available === 0]);
  } else {
    checks.push([`GET /v1/products/${v.sku}: ${v.product.status}`, false]);
  }
  if (v.diffs) {
    checks.push([`reconcile: ${v.diffs.length ? JSON.stringify(v.diffs) : 'no difference'}`, v.diffs.length === 0]);
  } else {
    checks.push(['reconcile: skipped (no DATABASE_URL)', true]);
  }
  return { notes, checks };
}

const list = (m: Map<string, number>): string => [...m].map(([k, v]) => `${k} ${v}`).join(', ') || '-';

export function printReport(r: CrowdResult): void {
  const out = (line = ''): void => console.log(line);
  const { healthz, crowd } = r;
  const winners = crowd.answers.filter((a) => a.cls === 'winner');
  const soldOut = crowd.answers.filter((a) => a.cls === 'sold-out');
  const other = crowd.answers.filter((a) => a.cls !== 'winner' && a.cls !== 'sold-out');
  const baseRate = healthz.answers.length / healthz.seconds;
  const crowdRate = crowd.answers.length / crowd.seconds;
  const baseLat = latencies(healthz.answers.filter((a) => a.cls === 'ok'));
  const crowdLat = latencies(crowd.answers);

  out(
    `crowd benchmark: ${r.buyers} buyers for ${r.units} units, ${r.concurrency} requests in flight, over HTTP to ${r.base}` +
      (r.respondAsync ? ', Prefer: respond-async' : ''),
  );
  out(`(${r.describe}); machine: ${os.cpus().length} cores, node ${process.version}`);
  out('');
  out(
    `${'phase'.padEnd(30)} ${'answers'.padStart(8)} ${'wall s'.padStart(8)} ${'answers/s'.padStart(10)} ${'x healthz'.padStart(10)} ${'p50 ms'.padStart(8)} ${'p99 ms'.padStart(8)}`,
  );
  for (const [ph, rate, lat] of [
    [healthz, baseRate, baseLat],
    [crowd, crowdRate, crowdLat],
  ] as const) {
    out(
      `${ph.name.padEnd(30)} ${String(ph.answers.length).padStart(8)} ${fmt(ph.seconds, 1).padStart(8)} ${fmt(rate, 1).padStart(10)} ${`${fmt(rate / baseRate, 4)}x`.padStart(10)} ${fmt(lat.p50).padStart(8)} ${fmt(lat.p99).padStart(8)}`,
    );
  }
  const f = r.floor;
  if (f) {
    const ok = f.answers.filter((a) => a.cls === 'ok');
    const l = latencies(ok);
    out(
      `${f.name.padEnd(30)} ${String(ok.length).padStart(8)} ${fmt(f.seconds, 1).padStart(8)} ${fmt(ok.length / f.seconds, 1).padStart(10)} ${'-'.padStart(10)} ${fmt(l.p50).padStart(8)} ${fmt(l.p99).padStart(8)}`,
    );
    if (ok.length !== f.answers.length) out(`  floor starts refused: ${list(countBy(f.answers, (a) => a.cls))}`);
    const sum = healthz.seconds + f.seconds;
    out(
      `  Temporal alone starts ${fmt(ok.length / f.seconds)} workflows/s; each winner's answer waits for one. Where the bare` +
        ` route already keeps every core busy, the crowd takes at least healthz's ${fmt(healthz.seconds, 1)} s + the starts'` +
        ` ${fmt(f.seconds, 1)} s = ${fmt(sum, 1)} s (${fmt(healthz.seconds / sum, 2)}x at best), before its sagas run.`,
    );
  }
  if (baseLat.n !== healthz.answers.length) {
    out(
      `  healthz answers other than 200: ${JSON.stringify(Object.fromEntries(countBy(healthz.answers, (a) => a.cls)))}`,
    );
  }
  out('');
  out(`${'crowd answers'.padEnd(30)} ${'count'.padStart(8)} ${'p50 ms'.padStart(8)} ${'p99 ms'.padStart(8)}`);
  const row = (label: string, xs: Answer[]) => {
    const l = latencies(xs);
    out(`${label.padEnd(30)} ${String(l.n).padStart(8)} ${fmt(l.p50).padStart(8)} ${fmt(l.p99).padStart(8)}`);
  };
  row(r.respondAsync ? '  202 accepted (winners)' : '  201 winners', winners);
  row('  409 sold-out', soldOut);
  row('  other', other);
  for (const [cls] of [...countBy(other, (a) => a.cls)].sort((a, b) => b[1] - a[1])) {
    row(
      `    ${cls}`,
      other.filter((a) => a.cls === cls),
    );
  }
  out(
    `  sold-out "final": ${list(countBy(soldOut, (a) => (a.final === undefined ? 'absent' : JSON.stringify(a.final))))}`,
  );
  if (r.counters.length) out(`  API counters during the crowd (/metrics): ${r.counters.join(', ')}`);
  out('');
  out(
    r.sagas
      ? `sagas started (Temporal visibility, Sku="${r.sku}"): ${r.sagas.started} for ${r.units} units (${r.sagas.running} still running, waiting for payment)`
      : 'sagas started: not counted (no TEMPORAL_ADDRESS)',
  );
  if (r.rows) {
    const total = r.rows.reduce((s, x) => s + x.n, 0);
    out(
      `purchase rows for the SKU: ${total} (${r.rows.map((x) => `${x.status}${x.rejection ? `/${x.rejection}` : ''} ${x.n}`).join(', ')})`,
    );
  }
  const c = r.checkouts;
  if (c) {
    out('');
    out(`checkouts after the 202s (followed through ${c.via}):`);
    out(
      `  time to all checkouts: ${fmt(c.lastReadyMs / 1000, 1)} s after the crowd's first request` +
        ` (the crowd's answers took ${fmt(crowd.seconds, 1)} s; waited ${fmt(c.waitedMs / 1000, 1)} s after them${c.timedOut ? ', gave up' : ''})`,
    );
    out(
      `  ${c.ready} of ${c.accepted} accepted got a checkout URL; final instead: ${list(c.finals)}; still pending: ${c.pending}`,
    );
    out(`  as each buyer reads it (GET /v1/purchases/:id with the buyer's token): ${list(c.visible)}`);
  }
  out('');
  out('answers:');
  for (const [what, ok] of r.notes) out(`  ${ok ? 'ok  ' : 'NOTE'} ${what}`);
  out('stock exact:');
  for (const [what, ok] of r.checks) out(`  ${ok ? 'ok  ' : 'FAIL'} ${what}`);
  out('');
  out(
    `crowd / healthz: answers/s ${fmt(crowdRate / baseRate, 4)}x, p50 latency ${fmt(crowdLat.p50 / baseLat.p50, 1)}x` +
      (c ? `; time to all checkouts ${fmt(c.lastReadyMs / 1000, 1)} s` : ''),
  );
}
