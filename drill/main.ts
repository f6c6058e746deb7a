// `npm run drill`: rehearses a drop. Starts the local stack or the cluster (or takes --base), runs
// the drop (drill/drop.ts: the product, the simulated buyers with live progress, the faults, the
// measures and the invariants), first without its faults when it has some (the baseline to measure
// them by), and writes summary.json and report.html. Exit 0 when every invariant held, 1 when one
// failed, 2 on usage.
import fs from 'node:fs';
import path from 'node:path';
import { runDrop, type DropResult } from './drop';
import { DrillHttp, sleep } from './http';
import { describeFaults, FAULT_MEANING } from './faults';
import { againstBaseline } from './measure';
import { measuredText } from './measure-report';
import { BEHAVIOUR_MEANING, BEHAVIOURS, readOptions, USAGE, UsageError, type DrillOptions } from './options';
import { reportHtml } from './report';
import { describeRules, headlineTable, soldOutAt, summarise } from './summary';
import { openTarget, type Target } from './target';
import { WEBHOOKS_IN_PARALLEL } from './stripe-usage';

const READY_TIMEOUT_MS = 90_000;

const say = (line: string) => console.error(line);
const aborter = new AbortController();

async function waitReady(api: DrillHttp): Promise<void> {
  const deadline = Date.now() + READY_TIMEOUT_MS;
  let last = '';
  while (Date.now() < deadline && !aborter.signal.aborted) {
    try {
      const r = await api.call('GET', '/readyz', '/readyz');
      if (r.status === 200) return;
      last = `${r.status}`;
    } catch (err) {
      last = (err as Error).message;
    }
    await sleep(250);
  }
  throw new Error(`GET /readyz did not answer 200 within ${READY_TIMEOUT_MS / 1000}s (last: ${last})`);
}

function describeDrill(opts: DrillOptions, target: Target, sku: string): string {
  const mix = BEHAVIOURS.map(
    (b) => `  ${b.padEnd(13)} ${(opts.mix[b] * 100).toFixed(1).padStart(5)} %  ${BEHAVIOUR_MEANING[b]}`,
  );
  return [
    `drill: ${opts.buyers} buyers for ${opts.units} units of ${sku} on ${target.describe}`,
    `  per-address limits ${target.addressLimits}`,
    ...(opts.abuser ? ['  and one abusive client, from an address of its own, far past those limits'] : []),
    `  hold ${opts.holdSeconds} s, arrivals over ${opts.arrivalSeconds} s, seed ${opts.seed}, ${opts.concurrency} sockets`,
    opts.room
      ? `  waiting room: ${opts.room.admitPerSecond} admitted a second, at most ${opts.room.maxActive} inside; opens ${opts.opensInSeconds} s after the product, ${(opts.early * 100).toFixed(0)} % join before`
      : '  no waiting room: buyers go straight to POST /v1/purchases',
    opts.stripeRate !== undefined
      ? `  Stripe: the emulator limits calls to ${opts.stripeRate || 'no'} a second (account and each endpoint)`
      : '  Stripe: the emulator as it is (by default the sandbox limits, 25/s)',
    `  webhooks: ${WEBHOOKS_IN_PARALLEL} deliveries in flight at once, as Stripe sends them in parallel`,
    `  faults (seconds after the opening): ${describeFaults(opts.faults)}`,
    ...[...new Set(opts.faults.map((f) => f.kind))].map((k) => `    ${k.padEnd(9)} ${FAULT_MEANING[k]}`),
    'what the buyers who get a checkout do (--mix):',
    ...mix,
  ].join('\n');
}

const checkoutTimes = (d: DropResult) =>
  d.recorder.buyers.flatMap((b) => (b.checkoutAt === undefined ? [] : [b.checkoutAt]));

function baselineOf(d: DropResult, opts: DrillOptions) {
  const times = checkoutTimes(d);
  return {
    checkouts: times,
    figures: {
      sku: d.sku,
      secondsToSellOut: soldOutAt(d.timeline, opts.units),
      checkouts: times.length,
      lastCheckoutSeconds: times.length ? Math.round(Math.max(...times) / 100) / 10 : null,
      invariantsHeld: d.checks.every((c) => c.result !== 'fail'),
    },
  };
}

async function main(opts: DrillOptions): Promise<number> {
  fs.mkdirSync(opts.out, { recursive: true });
  let crashed: string | undefined;
  const target = await openTarget(opts, process.env, {
    say,
    signal: aborter.signal,
    onCrash: (why) => {
      crashed = why;
      say(why);
      aborter.abort(new Error(why));
    },
  });
  try {
    const ready = new DrillHttp(target.apiUrls, 2, () => {});
    await waitReady(ready);
    ready.close();
    const describe = (sku: string) => describeDrill(opts, target, sku);
    const common = { target, describe, say, signal: aborter.signal };
    let baseline: DropResult | undefined;
    if (opts.baseline && opts.faults.length) {
      say('the same drop without faults first, to measure the faults by (--no-baseline skips it)...');
      baseline = await runDrop({
        ...common,
        describe: (sku) => `${describe(sku)}\n(the baseline: this drop without its faults)`,
        withFaults: false,
        opts: { ...opts, pauseBeforeCheck: undefined },
      });
    }
    const drop = await runDrop({ ...common, withFaults: true, opts });
    const { sku, recorder, checks } = drop;
    const summary = summarise({
      opts,
      startedAt: drop.startedAt,
      sku,
      target: target.describe,
      recorder,
      timeline: drop.timeline,
      checks,
      product: drop.counts,
      endedAt: drop.endedAt,
      rules: drop.rules,
      addressLimits: target.addressLimits,
      abuse: drop.abuse,
      measured: baseline
        ? againstBaseline(drop.measured, checkoutTimes(drop), drop.errorTimes, baselineOf(baseline, opts))
        : drop.measured,
    });
    fs.writeFileSync(path.join(opts.out, 'summary.json'), `${JSON.stringify(summary, null, 2)}\n`);
    fs.writeFileSync(path.join(opts.out, 'buyers.json'), `${JSON.stringify(recorder.buyers)}\n`);
    if (baseline)
      fs.writeFileSync(path.join(opts.out, 'baseline-buyers.json'), `${JSON.stringify(baseline.recorder.buyers)}\n`);
    const report = path.join(opts.out, 'report.html');
    fs.writeFileSync(report, reportHtml(summary));

    console.log(`\ndrill of ${sku}: ${opts.buyers} buyers for ${opts.units} units`);
    console.log(headlineTable(summary));
    const extra = measuredText(summary);
    if (extra) console.log(extra);
    console.log('invariants:');
    for (const c of checks) console.log(`  ${c.result.toUpperCase().padEnd(7)} ${c.name}: ${c.detail}`);
    console.log(
      `outcomes: ${Object.entries(summary.outcomes)
        .map(([k, v]) => `${k} ${v}`)
        .join(', ')}`,
    );
    if (summary.rules) console.log(`rules: ${describeRules(summary.rules)}`);
    if (summary.abuse)
      console.log(
        `abusive address ${summary.abuse.address}: ${JSON.stringify(summary.abuse.answers)} in ${summary.abuse.seconds} s`,
      );
    console.log(`report: ${report}\nsummary: ${path.join(opts.out, 'summary.json')}`);
    const failed = checks.filter((c) => c.result === 'fail');
    const baselineFailed = baseline?.checks.filter((c) => c.result === 'fail') ?? [];
    for (const c of baselineFailed)
      console.log(`  FAIL    (the baseline drop ${baseline!.sku}) ${c.name}: ${c.detail}`);
    failed.push(...baselineFailed);
    if (failed.length) {
      console.log(`drill FAILED: ${failed.map((c) => c.name).join('; ')}`);
      return 1;
    }
    return 0;
  } finally {
    await target.close();
    if (crashed) process.exitCode = 1;
  }
}

let signalled = false;
function onSignal(signal: NodeJS.Signals): void {
  if (signalled) return;
  signalled = true;
  say(`\n${signal}: stopping the drill and what it started`);
  aborter.abort(new Error(`interrupted by ${signal}`));
}

let parsed: DrillOptions | 'help';
try {
  parsed = readOptions(process.argv.slice(2), process.env);
} catch (err) {
  if (!(err instanceof UsageError)) throw err;
  console.error(`drill: ${err.message}\n\n${USAGE}`);
  process.exit(2);
}
if (parsed === 'help') {
  console.log(USAGE);
  process.exit(0);
}
process.on('SIGINT', onSignal);
process.on('SIGTERM', onSignal);
main(parsed).then(
  (code) => process.exit(code),
  (err: unknown) => {
    console.error(`drill: ${err instanceof Error ? err.message : String(err)}`);
    process.exit(signalled ? 130 : 1);
  },
);
