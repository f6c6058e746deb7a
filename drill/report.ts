// report.html: one self-contained file (open it from disk, no server, no network) with the drill's
// figures as tables and its charts drawn by uPlot, whose script and stylesheet are inlined from
// node_modules. The figures are the summary itself, embedded as JSON in the page.
import fs from 'node:fs';
import path from 'node:path';
import { measuredSections } from './measure-report';
import type { Summary } from './summary';

function uplotAssets(): { js: string; css: string } {
  const dist = path.dirname(require.resolve('uplot/dist/uPlot.iife.min.js'));
  return {
    js: fs.readFileSync(path.join(dist, 'uPlot.iife.min.js'), 'utf8'),
    css: fs.readFileSync(path.join(dist, 'uPlot.min.css'), 'utf8'),
  };
}

const escapeHtml = (s: string) =>
  s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);

/** JSON that is safe inside a <script> element (no `</script>`, no `<!--`). */
const scriptJson = (v: unknown) => JSON.stringify(v).replace(/</g, '\\u003c');

function table(head: string[], rows: Array<Array<string | number>>): string {
  const th = head.map((h) => `<th>${escapeHtml(h)}</th>`).join('');
  const tr = rows.map((r) => `<tr>${r.map((c) => `<td>${escapeHtml(String(c))}</td>`).join('')}</tr>`).join('\n');
  return `<table><thead><tr>${th}</tr></thead><tbody>${tr}</tbody></table>`;
}

export function reportHtml(s: Summary): string {
  const { js, css } = uplotAssets();
  const h = s.headline;
  const headline = table(
    ['figure', 'value'],
    [
      ['buyers / units', `${h.buyers} / ${h.units}`],
      [
        'waiting room',
        s.options.room ? `${s.options.room.admitPerSecond}/s, ${s.options.room.maxActive} inside` : 'none',
      ],
      ['checkouts opened', `${h.checkouts} (peak ${h.peakCheckoutsPerSecond}/s)`],
      ['sold', `${h.sold}${h.secondsToSellOut !== null ? `, all sold after ${h.secondsToSellOut} s` : ''}`],
      ['refunded', `${h.refunded} (${h.paidInTimeRefunded} of them paid before their hold lapsed)`],
      ['oversold', h.oversold],
      ['lost', h.lost],
      ['purchase answers', `${h.purchaseAnswersPerSecond}/s, p50 ${h.purchaseP50Ms} ms, p99 ${h.purchaseP99Ms} ms`],
      ['wait for a checkout (from arrival)', `p50 ${h.waitForCheckout.p50} ms, p99 ${h.waitForCheckout.p99} ms`],
      ['longest queue', h.peakQueue],
      ['duration', `${h.durationSeconds} s`],
    ],
  );
  const invariants = table(
    ['invariant', 'result', 'detail'],
    s.invariants.map((c) => [c.name, c.result, c.detail]),
  );
  const latency = table(
    ['answer', 'count', 'p50 ms', 'p90 ms', 'p99 ms', 'max ms'],
    s.latency.map((l) => [l.answer, l.count, l.p50, l.p90, l.p99, l.max]),
  );
  const outcomeNames = Object.keys(s.outcomes).sort();
  const byBehaviour = table(
    ['behaviour (share)', ...outcomeNames],
    Object.entries(s.outcomesByBehaviour).map(([b, row]) => [
      `${b} (${(s.options.mix[b as keyof Summary['options']['mix']] * 100).toFixed(0)} %)`,
      ...outcomeNames.map((o) => row[o] ?? 0),
    ]),
  );
  const rules = s.rules
    ? `<h2>The drop's rules</h2>
${table(
  ['rule', 'bots', 'humans'],
  [...new Set([...Object.keys(s.rules.bots), ...Object.keys(s.rules.humans)])]
    .sort()
    .map((k) => [k, s.rules!.bots[k] ?? 0, s.rules!.humans[k] ?? 0]),
)}
<p class="muted">${s.rules.humansSolved} challenges solved by the simulated humans, ${s.rules.humanSolveAttempts} attempts (PBKDF2 derivations) in all.</p>`
    : '';
  const measured = measuredSections(s)
    .map(
      (sec) =>
        `<h2 id="${sec.id}">${escapeHtml(sec.title)}</h2>\n${table(sec.head, sec.rows)}\n${sec.notes
          .map((n) => `<p class="muted">${escapeHtml(n)}</p>`)
          .join('\n')}`,
    )
    .join('\n');
  const verdict = h.invariantsHeld
    ? '<p class="ok">Every invariant held.</p>'
    : `<p class="bad">Failed: ${escapeHtml(
        s.invariants
          .filter((c) => c.result === 'fail')
          .map((c) => c.name)
          .join(', '),
      )}</p>`;
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>Drill ${escapeHtml(s.sku)}: ${h.buyers} buyers for ${h.units} units</title>
<style>${css}</style>
<style>
  body { font: 14px/1.4 system-ui, sans-serif; margin: 24px auto; max-width: 1100px; color: #222; }
  h1 { font-size: 22px; } h2 { font-size: 17px; margin-top: 28px; }
  table { border-collapse: collapse; margin: 8px 0; } td, th { border: 1px solid #ccc; padding: 3px 8px; text-align: left; }
  th { background: #f3f3f3; } .ok { color: #17803d; font-weight: 600; } .bad { color: #b3261e; font-weight: 600; }
  .charts { display: grid; grid-template-columns: 1fr 1fr; gap: 18px; } .chart h3 { font-size: 14px; margin: 4px 0; }
  .muted { color: #666; }
</style>
</head>
<body>
<h1>Drill: ${h.buyers} buyers for ${h.units} units</h1>
<p class="muted">SKU ${escapeHtml(s.sku)}, ${escapeHtml(s.target)}, started ${escapeHtml(s.startedAt)}, seed ${s.options.seed}, hold ${s.options.holdSeconds} s, arrivals over ${s.options.arrivalSeconds} s</p>
${verdict}
<h2>Headline</h2>
${headline}
<h2>Charts</h2>
<div class="charts">
  <div class="chart"><h3>Queue length</h3><div id="chart-queue"></div></div>
  <div class="chart"><h3>${s.options.room ? 'Admissions' : 'Arrivals'} and checkouts per second</h3><div id="chart-admissions"></div></div>
  <div class="chart"><h3>Holds and sales</h3><div id="chart-stock"></div></div>
  <div class="chart"><h3>POST /v1/purchases latency per second</h3><div id="chart-latency-time"></div></div>
  <div class="chart"><h3>Latency percentiles of each answer (ms)</h3><div id="chart-latency"></div></div>
  <div class="chart"><h3>Outcome of every buyer</h3><div id="chart-outcomes"></div></div>
</div>
<h2>Invariants</h2>
${invariants}
${rules}
${measured}
<h2>Outcomes by behaviour</h2>
${byBehaviour}
<h2>Latency of each answer</h2>
${latency}
<script id="drill-data" type="application/json">${scriptJson(s)}</script>
<script>${js}</script>
<script>${CHARTS_SCRIPT}</script>
</body>
</html>
`;
}

/** Draws the charts from the embedded summary; `window.drillCharts` lists them (the report's test reads it). */
const CHARTS_SCRIPT = String.raw`
(function () {
  var s = JSON.parse(document.getElementById('drill-data').textContent);
  var W = 520, H = 260;
  var tl = s.timeline;
  var t = tl.map(function (x) { return x.t; });
  // 'room.waiting': a field of the room's own counts, null where the room did not answer.
  var get = function (x, k) {
    var v = k.split('.').reduce(function (o, p) { return o == null ? o : o[p]; }, x);
    return v == null ? null : v;
  };
  var col = function (k) { return tl.map(function (x) { return get(x, k); }); };
  // The rise since the last sample that had the figure, per second (a gap is skipped, not counted as 0).
  var perSecond = function (k) {
    var last = null;
    return tl.map(function (x) {
      var v = get(x, k);
      if (v == null) return null;
      var r = last === null ? 0 : x.t > last.t ? Math.round(((v - last.v) / (x.t - last.t)) * 10) / 10 : 0;
      last = { t: x.t, v: v };
      return r;
    });
  };
  var secs = { x: { time: false } };
  var xAxis = { label: 's since the opening' };
  var charts = [];
  function draw(id, opts, data) {
    var el = document.getElementById(id);
    opts.width = W; opts.height = H;
    charts.push({ id: id, points: data[0].length, chart: new uPlot(opts, data, el) });
  }
  function line(label, color) { return { label: label, stroke: color, width: 2 }; }
  // With a room, the queue and the admissions are the room's own counts (its admin view, sampled each
  // second); the buyers' side is drawn beside them. Without one, the buyers waiting to try again.
  if (s.options.room) {
    draw('chart-queue', { scales: secs, axes: [xAxis, { label: 'buyers' }],
      series: [{ label: 's' }, line('waiting (room: tickets not admitted)', '#b3261e'), line('still in line (buyers polling)', '#d29922'),
        line('inside (room: admitted, not left)', '#8250df'), line('holding a checkout', '#1f6feb')] },
      [t, col('room.waiting'), col('queued'), col('room.active'), col('holding')]);
    draw('chart-admissions', { scales: secs, axes: [xAxis, { label: 'per second' }],
      series: [{ label: 's' }, line('admitted/s (room)', '#8250df'), line('checkouts/s', '#17803d')] },
      [t, perSecond('room.admitted'), perSecond('checkouts')]);
  } else {
    draw('chart-queue', { scales: secs, axes: [xAxis, { label: 'buyers' }],
      series: [{ label: 's' }, line('waiting to try again', '#b3261e'), line('holding a checkout', '#1f6feb')] },
      [t, col('queued'), col('holding')]);
    draw('chart-admissions', { scales: secs, axes: [xAxis, { label: 'per second' }],
      series: [{ label: 's' }, line('arrived/s (no room)', '#8250df'), line('checkouts/s', '#17803d')] },
      [t, perSecond('admitted'), perSecond('checkouts')]);
  }
  draw('chart-stock', { scales: secs, axes: [xAxis, { label: 'units' }],
    series: [{ label: 's' }, line('held', '#d29922'), line('sold', '#17803d'), line('available', '#6e7781'), line('refunded (buyers)', '#b3261e')] },
    [t, col('held'), col('sold'), col('available'), col('refunded')]);
  var pl = s.purchaseLatencyPerSecond;
  draw('chart-latency-time', { scales: { x: { time: false }, n: {} },
    axes: [xAxis, { label: 'ms' }, { scale: 'n', side: 1, label: 'answers/s', grid: { show: false } }],
    series: [{ label: 's' }, line('p50 ms', '#1f6feb'), line('p99 ms', '#b3261e'), { label: 'answers/s', stroke: '#6e7781', scale: 'n', dash: [4, 4] }] },
    [pl.map(function (x) { return x.second; }), pl.map(function (x) { return x.p50; }), pl.map(function (x) { return x.p99; }), pl.map(function (x) { return x.answers; })]);
  function bars(id, labels, series, data) {
    var idx = labels.map(function (_, i) { return i; });
    var n = series.length;
    draw(id, {
      scales: { x: { time: false, range: [-0.5, labels.length - 0.5] } },
      axes: [{ splits: function () { return idx; }, values: function (u, sp) { return sp.map(function (i) { return labels[i] || ''; }); },
               rotate: labels.length > 4 ? -35 : 0, size: labels.length > 4 ? 120 : 40, font: '10px system-ui' }, {}],
      legend: { show: n > 1 },
      series: [{ label: 'answer' }].concat(series.map(function (sr, k) {
        return { label: sr.label, fill: sr.color, stroke: sr.color,
          paths: uPlot.paths.bars({ size: [0.8 / n, 60], align: n === 1 ? 0 : (k === 0 ? -1 : k === n - 1 ? 1 : 0) }),
          points: { show: false } };
      })),
    }, [idx].concat(data));
  }
  var lat = s.latency;
  bars('chart-latency', lat.map(function (l) { return l.answer; }),
    [{ label: 'p50', color: '#1f6feb' }, { label: 'p90', color: '#d29922' }, { label: 'p99', color: '#b3261e' }],
    [lat.map(function (l) { return l.p50; }), lat.map(function (l) { return l.p90; }), lat.map(function (l) { return l.p99; })]);
  var names = Object.keys(s.outcomes).sort();
  bars('chart-outcomes', names, [{ label: 'buyers', color: '#8250df' }], [names.map(function (k) { return s.outcomes[k]; })]);
  window.drillCharts = charts.map(function (c) { return { id: c.id, points: c.points }; });
})();
`;
