// `npm run drill`: rehearses a drop. Starts the local stack (or takes --base), creates the product
// (with its waiting room, if any), releases the simulated buyers (drill/buyer.ts) with live progress,
// waits for their purchases to settle, checks the invariants (drill/invariants.ts), and writes
// summary.json and report.html. Exit 0 when every invariant held, 1 when one failed, 2 on usage.
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { signBuyerToken } from '../config/buyer-tokens';
import { planBuyers, runBuyer, type SaleContext } from './buyer';
import { DrillHttp, sleep } from './http';
import { checkInvariants, type ProductCounts } from './invariants';
import { RULES_PRODUCT, SaleRules } from './rules';
import { BEHAVIOUR_MEANING, BEHAVIOURS, readOptions, stamp, USAGE, UsageError, type DrillOptions } from './options';
import { Progress, type ProgressRow } from './progress';
import { Recorder, type BuyerRecord } from './recorder';
import { reportHtml } from './report';
import { roomView, type RoomView } from './room';
import { describeRules, headlineTable, summarise, type Sample } from './summary';
import { openTarget, type Target } from './target';

const READY_TIMEOUT_MS = 90_000;
const SAMPLE_EVERY_MS = 1000;
/** Without a room, buyers may start a second after the product exists. */
const NO_ROOM_LEAD_MS = 1000;
/** Sockets for the buyers' polls and their payments on the emulator. */
const POLL_SOCKETS = 64;

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

async function readProduct(api: DrillHttp, sku: string): Promise<ProductCounts | undefined> {
  try {
    const r = await api.call('GET', `/v1/products/${encodeURIComponent(sku)}`, '/v1/products/:sku');
    if (r.status !== 200) return undefined;
    const n = (k: string) => Number(r.body[k] ?? 0);
    return { total: n('total'), available: n('available'), held: n('held'), sold: n('sold'), oversold: n('oversold') };
  } catch {
    return undefined;
  }
}

function describeDrill(opts: DrillOptions, target: Target, sku: string): string {
  const mix = BEHAVIOURS.map(
    (b) => `  ${b.padEnd(13)} ${(opts.mix[b] * 100).toFixed(1).padStart(5)} %  ${BEHAVIOUR_MEANING[b]}`,
  );
  return [
    `drill: ${opts.buyers} buyers for ${opts.units} units of ${sku} on ${target.describe}`,
    `  hold ${opts.holdSeconds} s, arrivals over ${opts.arrivalSeconds} s, seed ${opts.seed}, ${opts.concurrency} sockets`,
    opts.room
      ? `  waiting room: ${opts.room.admitPerSecond} admitted a second, at most ${opts.room.maxActive} inside; opens ${opts.opensInSeconds} s after the product, ${(opts.early * 100).toFixed(0)} % join before`
      : '  no waiting room: buyers go straight to POST /v1/purchases',
    'what the buyers who get a checkout do (--mix):',
    ...mix,
  ].join('\n');
}

/** The file the test (or a person) deletes to let the drill go on to its checks. */
async function pauseBeforeCheck(file: string, sku: string): Promise<void> {
  fs.writeFileSync(file, JSON.stringify({ sku, pid: process.pid }));
  say(`paused before the checks: delete ${file} to go on`);
  while (fs.existsSync(file) && !aborter.signal.aborted) await sleep(200);
}

async function main(opts: DrillOptions): Promise<number> {
  const startedAt = new Date();
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
    // The opening is set once the product exists; until then the recorder counts from now.
    let recorder = new Recorder(Date.now());
    const record = (a: string, ms: number) => recorder.record(a, ms);
    const api = new DrillHttp(target.base, opts.concurrency, record);
    const poll = new DrillHttp(target.base, POLL_SOCKETS, record);
    // The progress and the timeline read the product on a socket of their own, so they stay live under the crowd.
    const watch = new DrillHttp(target.base, 2, record);
    const emulator = new DrillHttp(target.emulatorUrl, POLL_SOCKETS, record);
    await waitReady(api);

    const sku = `drill-${stamp(startedAt).toLowerCase()}-${randomUUID().slice(0, 6)}`;
    say(describeDrill(opts, target, sku));
    const ttlSeconds = 6 * 3600;
    const tokens = await Promise.all(
      Array.from({ length: opts.buyers }, (_, n) =>
        signBuyerToken(target.buyerSecret, `${sku}-buyer-${n}`, { ttlSeconds }),
      ),
    );
    const plans = planBuyers(opts);
    // With bots in the crowd the product has the drop's rules: the bot check and the address limit.
    const rules = new SaleRules(opts.mix.bot > 0, api);
    const leadMs = opts.room ? opts.opensInSeconds * 1000 : NO_ROOM_LEAD_MS;
    const opening = Date.now() + leadMs;
    const created = await api.call('POST', '/v1/products', '/v1/products', {
      headers: { authorization: `Bearer ${target.adminToken}` },
      body: {
        sku,
        name: `Drill ${sku}`,
        priceCents: 12_900,
        currency: 'eur',
        stock: opts.units,
        holdSeconds: opts.holdSeconds,
        maxPerBuyer: 1,
        buckets: Math.min(8, opts.units),
        ...(opts.room ? { opensAt: new Date(opening).toISOString(), waitingRoom: { ...opts.room } } : {}),
        ...(rules.on ? RULES_PRODUCT : {}),
      },
    });
    if (created.status !== 201) throw new Error(`POST /v1/products: ${created.status} ${JSON.stringify(created.body)}`);
    recorder = new Recorder(opening);
    recorder.buyers.push(
      ...plans.map((p, n): BuyerRecord => ({
        buyerId: `${sku}-buyer-${n}`,
        behaviour: p.behaviour,
        early: p.early,
        phase: 'arriving',
        posts: 0,
      })),
    );

    const holdMs = opts.holdSeconds * 1000;
    const roomMs = opts.room ? (opts.buyers / opts.room.admitPerSecond) * 1500 : 0;
    const saleDeadline = opts.arrivalSeconds * 1000 + Math.max(2 * holdMs, 30_000) + roomMs;
    const settleAt = saleDeadline + holdMs + opts.settleSeconds * 1000;
    const ctx: SaleContext = {
      api,
      poll,
      emulator,
      recorder,
      sku,
      room: !!opts.room,
      rules,
      saleDeadline,
      settleDeadline: () => settleAt,
    };

    let product: ProductCounts | undefined;
    let room: RoomView | undefined;
    let stage = opts.room ? 'pre-queue' : 'selling';
    const timeline: Sample[] = [];
    const sample = async () => {
      [product, room] = await Promise.all([
        readProduct(watch, sku),
        opts.room ? roomView(watch, sku, target.adminToken) : undefined,
      ]);
      const t = recorder.tally();
      timeline.push({
        t: Math.round(recorder.now() / 100) / 10,
        queued: t.queued,
        admitted: opts.room ? t.admitted : opts.buyers - t.arriving,
        ...(room
          ? { room: { waiting: room.waiting, admitted: room.admitted, active: room.active, soldOut: room.soldOut } }
          : {}),
        checkouts: t.checkouts,
        holding: t.holding,
        held: product?.held,
        sold: product?.sold,
        available: product?.available,
        paid: t.paid,
        confirmed: t.confirmed,
        refunded: t.refunded,
        soldOut: t.soldOut,
        done: t.done,
      });
    };
    const row = (): ProgressRow => {
      const t = recorder.tally();
      return {
        elapsedS: recorder.now() / 1000,
        stage,
        buyers: opts.buyers,
        arrived: opts.buyers - t.arriving,
        queued: t.queued,
        admitted: opts.room ? t.admitted : t.checkouts,
        holding: t.holding,
        paid: t.paid,
        confirmed: t.confirmed,
        refunded: t.refunded,
        soldOut: t.soldOut,
        done: t.done,
        product: product && { ...product },
        room: room && { waiting: room.waiting, active: room.active },
      };
    };
    const progress = new Progress(process.stderr, row);
    progress.start();
    let sampling = true;
    const sampler = (async () => {
      while (sampling && !aborter.signal.aborted) {
        const next = Date.now() + SAMPLE_EVERY_MS;
        if (recorder.now() >= -leadMs) await sample();
        if (recorder.now() >= 0 && stage === 'pre-queue') stage = 'selling';
        await sleep(next - Date.now());
      }
    })();
    const everyone = Promise.all(
      recorder.buyers.map((b, n) =>
        runBuyer(ctx, b, tokens[n], plans[n]).catch((err: Error) => {
          b.outcome = `error ${err.message}`;
          b.phase = 'done';
        }),
      ),
    );
    const watchStage = setInterval(() => {
      const t = recorder.tally();
      if (stage === 'selling' && t.arriving === 0 && t.queued + t.buying + t.admitted + t.holding === 0)
        stage = 'settling';
    }, 250);
    await Promise.race([
      everyone,
      new Promise((_, reject) =>
        aborter.signal.addEventListener('abort', () => reject(aborter.signal.reason as Error)),
      ),
    ]);
    clearInterval(watchStage);
    sampling = false;
    await sampler;
    await sample();
    const endedAt = recorder.now();
    stage = 'checking';
    progress.stop();

    if (opts.pauseBeforeCheck) await pauseBeforeCheck(opts.pauseBeforeCheck, sku);
    say('checking the invariants...');
    const counts = await readProduct(api, sku);
    if (!counts) throw new Error(`GET /v1/products/${sku} did not answer`);
    const checks = await checkInvariants({
      sku,
      buyers: recorder.buyers,
      product: counts,
      stripe: target.stripe,
      db: target.db,
      temporal: target.temporal,
    });
    const summary = summarise({
      opts,
      startedAt,
      sku,
      target: target.describe,
      recorder,
      timeline,
      checks,
      product: counts,
      endedAt,
      rules,
    });
    fs.writeFileSync(path.join(opts.out, 'summary.json'), `${JSON.stringify(summary, null, 2)}\n`);
    fs.writeFileSync(path.join(opts.out, 'buyers.json'), `${JSON.stringify(recorder.buyers)}\n`);
    const report = path.join(opts.out, 'report.html');
    fs.writeFileSync(report, reportHtml(summary));
    for (const client of [api, poll, watch, emulator]) client.close();

    console.log(`\ndrill of ${sku}: ${opts.buyers} buyers for ${opts.units} units`);
    console.log(headlineTable(summary));
    console.log('invariants:');
    for (const c of checks) console.log(`  ${c.result.toUpperCase().padEnd(7)} ${c.name}: ${c.detail}`);
    console.log(
      `outcomes: ${Object.entries(summary.outcomes)
        .map(([k, v]) => `${k} ${v}`)
        .join(', ')}`,
    );
    if (summary.rules) console.log(`rules: ${describeRules(summary.rules)}`);
    console.log(`report: ${report}\nsummary: ${path.join(opts.out, 'summary.json')}`);
    const failed = checks.filter((c) => c.result === 'fail');
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
