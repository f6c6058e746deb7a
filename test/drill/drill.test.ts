import fs from 'node:fs';
import path from 'node:path';
import test, { type ExecutionContext } from 'ava';
import { launchBrowser } from '../helpers/browser';
import { drillOutDir, runDrill } from '../helpers/drill';
import { ADMIN_TOKEN, BUYER_TOKEN_SECRET, createOwnDatabase, startSystem } from '../helpers/system';

// `npm run drill` as its user runs it: a child process, its own stack or --base of one, its exit
// code, its summary.json and report.html.

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const sum = (o: Record<string, number>) => Object.values(o).reduce((a, b) => a + b, 0);

let smallDrillOut: string | undefined;

test.serial('a small drill on its own stack serves every buyer once and every invariant holds', async (t) => {
  t.timeout(240_000);
  const out = drillOutDir('small');
  const buyers = 150;
  const run = await runDrill([
    ...['--buyers', String(buyers), '--units', '15', '--hold', '6', '--arrival', '2', '--settle', '45'],
    ...['--seed', '11', '--out', out],
  ]);
  t.is(run.code, 0, `drill exited ${run.code}:\n${run.stdout}\n${run.stderr.slice(-3000)}`);

  const summary = JSON.parse(fs.readFileSync(path.join(out, 'summary.json'), 'utf8'));
  t.is(summary.headline.buyers, buyers);
  t.is(sum(summary.outcomes), buyers, 'every buyer has exactly one outcome');
  t.false('none' in summary.outcomes);
  for (const [behaviour, row] of Object.entries<Record<string, number>>(summary.outcomesByBehaviour)) {
    t.true(
      Object.keys(row).every((o) => o !== 'none'),
      `${behaviour} buyers all have an outcome`,
    );
  }
  const results = Object.fromEntries(summary.invariants.map((c: any) => [c.name, c.result]));
  t.deepEqual(
    Object.values(results).filter((r) => r !== 'pass'),
    [],
    `every invariant passes (none skipped: the drill sees the database and Temporal): ${JSON.stringify(summary.invariants)}`,
  );
  t.is(summary.invariants.length, 7);
  // Sales add up: what the product sold is what the buyers were confirmed for, never beyond stock.
  const confirmed = (summary.outcomes.confirmed ?? 0) + (summary.outcomes.late_confirmed ?? 0);
  t.is(summary.headline.sold, confirmed);
  t.true(summary.headline.sold <= 15);
  t.is(summary.headline.oversold, 0);
  t.is(summary.headline.lost, 0);
  t.true(summary.headline.checkouts >= 15, 'at least the stock was handed out as checkouts');
  t.true(summary.timeline.length >= 3, 'a sample a second');
  t.true(summary.latency.some((l: any) => l.answer === 'POST /v1/purchases 201' && l.count > 0));
  // The API's own time for the purchases, from its /metrics (interpolated in its buckets, so not
  // compared with the buyers' figure), and the drill's own wait for sockets, counted apart.
  const inApi = summary.apiTimes.find((r: any) => r.route === 'POST /v1/purchases');
  t.true(inApi.count >= summary.headline.checkouts, JSON.stringify(summary.apiTimes));
  t.true(inApi.p50 > 0, JSON.stringify(inApi));
  t.regex(run.stdout, /The APIs' own time per route/);
  t.true(summary.headline.socketWait.count > 0);
  t.true(summary.headline.drillLoopDelay.count > 0, 'the drill’s event loop was watched while its crowd ran');
  t.regex(run.stdout, /drill event loop +ran late p50/);

  // The report: one file with the charts' library and data inside.
  const html = fs.readFileSync(path.join(out, 'report.html'), 'utf8');
  t.regex(html, /<script id="drill-data" type="application\/json">/);
  const embedded = JSON.parse(html.match(/<script id="drill-data" type="application\/json">(.*?)<\/script>/s)![1]);
  t.deepEqual(embedded.outcomes, summary.outcomes);
  t.is(embedded.timeline.length, summary.timeline.length);
  t.true(html.includes('uPlot'), 'uPlot is inlined');
  t.notRegex(html, /<script[^>]+src=|<link[^>]+href=/, 'nothing is loaded from elsewhere');
  for (const id of ['queue', 'admissions', 'stock', 'latency-time', 'latency', 'outcomes'])
    t.true(html.includes(`id="chart-${id}"`));

  // Progress while it ran (stderr is no terminal here: plain lines), the mix, and the headline at the end.
  t.regex(run.stderr, /drill: \d+s selling, arrived/);
  t.regex(run.stderr, /pay +\d+\.\d %/);
  t.regex(run.stdout, /invariants +all held/);
  t.true(run.stdout.includes(path.join(out, 'report.html')));
  smallDrillOut = out;
});

let roomDrillOut: string | undefined;

test.serial(
  'a drill with a waiting room and a pre-queue admits buyers, accounts for each and keeps every invariant',
  async (t) => {
    t.timeout(240_000);
    const out = drillOutDir('room');
    const buyers = 120;
    const units = 12;
    // A database of its own: its room is stepped by its own API's admitter, not by whichever test
    // process holds the suite database's admitter lock (a busy one stalled every room there).
    const run = await runDrill(
      [
        ...['--buyers', String(buyers), '--units', String(units), '--hold', '6', '--arrival', '2', '--settle', '45'],
        // The early share arrives over the 10 s before the opening: a drill process late by a second
        // on a loaded machine (four test files at once) still has most of them in before it.
        ...['--room', '40,20', '--opens-in', '10', '--early', '0.3', '--seed', '3', '--out', out],
      ],
      undefined,
      // Its API tells a buyer beyond reach of every unit to ask again within 5 s, not 60 s: those still
      // in line when the last unit sells learn it then, not at the end of the sale, 26 s later.
      { DATABASE_URL: await createOwnDatabase(), ROOM_MAX_POLL_SECONDS: '5' },
    );
    t.is(run.code, 0, `drill exited ${run.code}:\n${run.stdout}\n${run.stderr.slice(-3000)}`);

    const summary = JSON.parse(fs.readFileSync(path.join(out, 'summary.json'), 'utf8'));
    const records: Array<{
      early: boolean;
      arrivedAt?: number;
      admittedAt?: number;
      purchaseId?: string;
      outcome?: string;
    }> = JSON.parse(fs.readFileSync(path.join(out, 'buyers.json'), 'utf8'));
    t.deepEqual(summary.options.room, { admitPerSecond: 40, maxActive: 20 });
    t.deepEqual(
      summary.invariants.filter((c: any) => c.result !== 'pass'),
      [],
      'every invariant passes, none skipped',
    );
    t.is(summary.invariants.length, 7);

    // Every buyer is accounted for once: a checkout (and its purchase's end), or turned away by the room or the stock.
    t.is(sum(summary.outcomes), buyers);
    const odd = Object.keys(summary.outcomes).filter((o) => o === 'none' || o.startsWith('error') || o === 'gave_up');
    t.deepEqual(odd, [], `no buyer errored or gave up: ${JSON.stringify(summary.outcomes)}`);
    const withCheckout = records.filter((b) => b.purchaseId).length;
    t.is(summary.headline.checkouts, withCheckout);
    const turnedAway = Object.entries<number>(summary.outcomes)
      .filter(([o]) => o.startsWith('room_') || o.startsWith('sold_out'))
      .reduce((a, [, n]) => a + n, 0);
    t.is(withCheckout + turnedAway, buyers, `checkouts + turned away = buyers: ${JSON.stringify(summary.outcomes)}`);

    // Buyers were admitted, every checkout went to an admitted buyer, and the room counted them.
    const admitted = records.filter((b) => b.admittedAt !== undefined);
    t.true(admitted.length >= units, `${admitted.length} buyers admitted`);
    t.true(records.every((b) => !b.purchaseId || b.admittedAt !== undefined));
    const last = summary.timeline[summary.timeline.length - 1];
    t.true(last.room.admitted >= admitted.length, `the room admitted ${last.room.admitted}`);

    // What the crowd cost: every buyer joined once (a join lost to the network is tried again) and polled.
    const { crowd } = summary;
    t.is(crowd.inLine, buyers, 'every buyer left the line with an outcome');
    t.true(crowd.joins.count >= buyers, `${crowd.joins.count} joins`);
    t.true(crowd.polls.count > 0 && crowd.minutesWaited > 0, JSON.stringify(crowd));
    t.is(crowd.pollsPerBuyer, Math.round((crowd.polls.count / buyers) * 10) / 10);
    t.true(crowd.purchaseReads.count >= withCheckout, 'each buyer with a checkout read its purchase');
    t.regex(run.stdout, /queue polls\s+\d+: [\d.]+ per buyer in line, [\d.]+ per minute waited/);
    t.true(last.room.soldOut, 'the room closed once every unit was sold');

    // The early share joined the pre-queue before the opening, and the room counted them there.
    const early = records.filter((b) => b.early);
    t.true(early.length > 10, `${early.length} early buyers`);
    // (a buyer due a few ms before the opening may start just after it on a loaded machine)
    const before = early.filter((b) => b.arrivedAt !== undefined && b.arrivedAt < 0).length;
    t.true(before >= early.length * 0.8, `${before} of ${early.length} early buyers arrived before the opening`);
    t.true(
      early.some((b) => b.admittedAt !== undefined),
      'pre-queued buyers were admitted',
    );
    t.true(
      summary.timeline.some((x: any) => x.t < 0 && x.room?.waiting > 0),
      'the room counted its pre-queue',
    );
    t.true(summary.headline.peakQueue > 0);

    // Sales add up, never beyond stock.
    const confirmed = (summary.outcomes.confirmed ?? 0) + (summary.outcomes.late_confirmed ?? 0);
    t.is(summary.headline.sold, confirmed);
    t.true(summary.headline.sold <= units);
    t.is(summary.headline.oversold, 0);
    t.is(summary.headline.lost, 0);
    t.true(summary.latency.some((l: any) => l.answer === 'GET /v1/queue/:ticket 200' && l.count > 0));
    t.false(
      summary.latency.some((l: any) => / 403 /.test(`${l.answer} `)),
      'no purchase was refused for its admission',
    );
    t.regex(run.stderr, /drill: -?\d+s pre-queue, arrived/);
    roomDrillOut = out;
  },
);

for (const [which, out] of [
  ['the small drill', () => smallDrillOut],
  ['the room drill', () => roomDrillOut],
] as const) {
  test.serial(`the report of ${which} draws its charts in Chromium`, async (t) => {
    t.timeout(60_000);
    const dir = out();
    if (!dir) return t.fail(`${which} did not produce a report`);
    await chartsDrawn(t, path.join(dir, 'report.html'));
  });
}

async function chartsDrawn(t: ExecutionContext, report: string): Promise<void> {
  const browser = await launchBrowser();
  try {
    const page = await browser.newPage();
    const errors: string[] = [];
    page.on('pageerror', (e) => errors.push(e.message));
    await page.goto(`file://${report}`);
    await page.waitForFunction(() => (window as any).drillCharts?.length === 6);
    const charts = await page.evaluate(() => (window as any).drillCharts);
    t.deepEqual(errors, []);
    for (const c of charts) t.true(c.points > 0, `${c.id} has data`);
    // Each chart's canvas has something drawn on it (pixels that are not blank).
    const painted = await page.evaluate(() =>
      [...document.querySelectorAll<HTMLCanvasElement>('.chart canvas')].map((canvas) => {
        const ctx = canvas.getContext('2d')!;
        const { data } = ctx.getImageData(0, 0, canvas.width, canvas.height);
        let n = 0;
        for (let i = 3; i < data.length; i += 4) if (data[i] !== 0) n++;
        return n;
      }),
    );
    t.is(painted.length, 6);
    for (const n of painted) t.true(n > 500, `a canvas with ${n} painted pixels`);
  } finally {
    await browser.close();
  }
}

// With bots in the crowd (`--mix bot=<share>`) the product has the bot check and a limit per address;
// the humans solve each challenge and ship to addresses of their own, the bots send no solution or
// replay a spent one and ship to one address. Every bot must be stopped by a named rule, no human by any.
test.serial(
  'a drill with 20 % bots: every bot stopped by a named rule, no human stopped by one, every invariant held',
  async (t) => {
    t.timeout(240_000);
    const out = drillOutDir('bots');
    const buyers = 150;
    // The other shares add up to 1: bot=0.25 is 20 % of the crowd once normalised.
    const run = await runDrill([
      ...['--buyers', String(buyers), '--units', '15', '--hold', '6', '--arrival', '2', '--settle', '45'],
      ...['--mix', 'bot=0.25', '--seed', '5', '--out', out],
    ]);
    t.is(run.code, 0, `drill exited ${run.code}:\n${run.stdout}\n${run.stderr.slice(-3000)}`);
    const summary = JSON.parse(fs.readFileSync(path.join(out, 'summary.json'), 'utf8'));
    const records: Array<{ behaviour: string; outcome: string }> = JSON.parse(
      fs.readFileSync(path.join(out, 'buyers.json'), 'utf8'),
    );
    const bots = records.filter((b) => b.behaviour === 'bot');
    t.true(bots.length >= 20 && bots.length <= 45, `${bots.length} bots of ${buyers}`);
    t.is(summary.options.mix.bot, 0.2);

    // What each rule stopped, in the summary and the report.
    t.false('not stopped' in summary.rules.bots, JSON.stringify(summary.rules));
    t.is(
      Object.values<number>(summary.rules.bots).reduce((a, b) => a + b, 0),
      bots.length,
      'every bot is counted under one rule',
    );
    t.true((summary.rules.bots['bot check: missing'] ?? 0) > 0);
    t.true((summary.rules.bots['bot check: reused'] ?? 0) > 0, 'some bots replayed a spent solution');
    t.deepEqual(Object.keys(summary.rules.humans), ['not stopped']);
    t.true(summary.rules.humansSolved >= buyers - bots.length, 'every human solved at least one challenge');
    const check = summary.invariants.find((c: any) => c.name.startsWith('every bot stopped'));
    t.is(check?.result, 'pass', JSON.stringify(check));
    t.true(
      summary.invariants.every((c: any) => c.result === 'pass'),
      JSON.stringify(summary.invariants),
    );
    // Humans' outcomes are the ones their behaviour explains: bought, refunded with a reason of stock, or none.
    for (const b of records.filter((r) => r.behaviour !== 'bot')) t.false(b.outcome.startsWith('stopped_'), b.outcome);
    t.is(summary.headline.oversold, 0);
    t.is(summary.headline.lost, 0);
    const html = fs.readFileSync(path.join(out, 'report.html'), 'utf8');
    t.regex(html, /The drop's rules/);
    t.regex(run.stdout, /rules: bots: bot check/);
  },
);

test.serial('a drill whose stock was changed behind the ledger exits non-zero naming the ledger', async (t) => {
  t.timeout(240_000);
  const sys = await startSystem();
  try {
    const out = drillOutDir('tampered');
    const pause = path.join(out, 'pause');
    const run = runDrill([
      ...['--base', sys.apiUrl, '--admin-token', ADMIN_TOKEN, '--buyer-token-secret', BUYER_TOKEN_SECRET],
      ...['--emulator', sys.emulator.url, '--pause-before-check', pause],
      ...[
        '--buyers',
        '40',
        '--units',
        '6',
        '--hold',
        '4',
        '--arrival',
        '1',
        '--settle',
        '30',
        '--seed',
        '5',
        '--out',
        out,
      ],
    ]);
    // The sale is over when the drill writes its pause file: tamper with the stock, then let it check.
    let sku: string | undefined;
    const deadline = Date.now() + 200_000;
    while (!sku) {
      if (fs.existsSync(pause)) {
        try {
          sku = JSON.parse(fs.readFileSync(pause, 'utf8')).sku;
        } catch {
          // written but not yet complete
        }
      }
      if (!sku && Date.now() > deadline) return t.fail('the drill never paused before its checks');
      if (!sku) await sleep(200);
    }
    const { rowCount } = await sys.db.query(
      'UPDATE stock_buckets SET available = available + 3 WHERE sku = $1 AND bucket = (SELECT min(bucket) FROM stock_buckets WHERE sku = $1)',
      [sku],
    );
    t.is(rowCount, 1);
    fs.rmSync(pause);
    const r = await run;
    t.is(r.code, 1, `${r.stdout}\n${r.stderr.slice(-2000)}`);
    t.regex(r.stdout, /drill FAILED: .*the ledger reconciles/);
    t.regex(r.stdout, /FAIL +the ledger reconciles: available \(ledger vs buckets\)/);
    const summary = JSON.parse(fs.readFileSync(path.join(out, 'summary.json'), 'utf8'));
    const ledger = summary.invariants.find((c: any) => c.name === 'the ledger reconciles');
    t.is(ledger.result, 'fail');
    t.false(summary.headline.invariantsHeld);
    // The outside view sees it too: the product's counts no longer add up to its total.
    t.is(summary.invariants.find((c: any) => c.name === 'no unit oversold (product counts)').result, 'fail');
    t.is(sum(summary.outcomes), 40);
  } finally {
    await sys.close();
  }
});
