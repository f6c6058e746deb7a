// One drop: creates the product (with its waiting room, if any), releases the simulated buyers
// (drill/buyer.ts) with live progress and the faults on their schedule, waits for their purchases to
// settle, measures (drill/measure.ts) and checks the invariants (drill/invariants.ts). The drill runs
// one, or two on the same deployment: first the same crowd without faults, to measure the faults by.
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import { signBuyerToken } from '../config/buyer-tokens';
import { Abuser, type AbuseFigures } from './abuser';
import { planBuyers, runBuyer, type SaleContext } from './buyer';
import { RULES_PRODUCT, SaleRules } from './rules';
import { DrillHttp, sleep } from './http';
import { checkInvariants, type Check, type ProductCounts } from './invariants';
import { DropMeasures, type Measured } from './measure';
import { stamp, type DrillOptions } from './options';
import { Progress, type ProgressRow } from './progress';
import { Recorder, type BuyerRecord } from './recorder';
import { roomView, type RoomView } from './room';
import type { Sample } from './summary';
import type { Target } from './target';

const SAMPLE_EVERY_MS = 1000;
/** Without a room, buyers may start a second after the product exists. */
const NO_ROOM_LEAD_MS = 1000;
/** Sockets for the payments on the emulator. */
const EMULATOR_SOCKETS = 64;

export interface DropResult {
  sku: string;
  startedAt: Date;
  recorder: Recorder;
  timeline: Sample[];
  checks: Check[];
  counts: ProductCounts;
  /** ms after the opening when the last buyer had its outcome. */
  endedAt: number;
  measured: Measured;
  /** When the buyers' calls were answered 5xx or failed, ms since the opening. */
  errorTimes: number[];
  /** What the drop's rules (bot check, address limit) stopped, when the crowd had bots. */
  rules?: SaleRules;
  /** With --abuser: what the abusive address was answered. */
  abuse?: AbuseFigures;
}

export async function readProduct(api: DrillHttp, sku: string, attempts = 1): Promise<ProductCounts | undefined> {
  for (let attempt = 1; ; attempt++) {
    try {
      const r = await api.call('GET', `/v1/products/${encodeURIComponent(sku)}`, '/v1/products/:sku');
      if (r.status === 200) {
        const n = (k: string) => Number(r.body[k] ?? 0);
        return {
          total: n('total'),
          available: n('available'),
          held: n('held'),
          sold: n('sold'),
          oversold: n('oversold'),
        };
      }
    } catch {
      // a killed API, or one not answering yet: asked again below
    }
    if (attempt >= attempts) return undefined;
    await sleep(500);
  }
}

/** The file the test (or a person) deletes to let the drill go on to its checks. */
async function pauseBeforeCheck(file: string, sku: string, say: (line: string) => void, signal: AbortSignal) {
  fs.writeFileSync(file, JSON.stringify({ sku, pid: process.pid }));
  say(`paused before the checks: delete ${file} to go on`);
  while (fs.existsSync(file) && !signal.aborted) await sleep(200);
}

export async function runDrop(o: {
  target: Target;
  opts: DrillOptions;
  describe: (sku: string) => string;
  /** False for the baseline: the same drop, its faults left out (its deadlines still allow for them). */
  withFaults: boolean;
  say: (line: string) => void;
  signal: AbortSignal;
}): Promise<DropResult> {
  const { target, opts, say, signal } = o;
  const startedAt = new Date();
  const sku = `drill-${stamp(startedAt).toLowerCase()}-${randomUUID().slice(0, 6)}`;
  say(o.describe(sku));
  // The opening is set once the product exists; until then the recorder counts from now.
  let recorder = new Recorder(Date.now());
  const record = (a: string, ms: number, waitedMs: number) => {
    recorder.record(a, ms, waitedMs);
    measures.count(a, recorder.now());
  };
  // The crowd's own connections come from many addresses where the per-address limits are on.
  const crowd = { localAddress: target.crowdAddress };
  const api = new DrillHttp(target.apiUrls, opts.concurrency, record, crowd);
  const poll = new DrillHttp(target.apiUrls, opts.concurrency, record, crowd);
  // The progress and the timeline read the product on a socket of their own, so they stay live under the crowd.
  const watch = new DrillHttp(target.apiUrls, 2 * target.apiUrls.length, record);
  const emulator = new DrillHttp(target.emulatorUrl, EMULATOR_SOCKETS, record);
  // The drill's own control calls (limits, faults, counts) are not the buyers' answers: not recorded.
  const control = new DrillHttp(target.emulatorUrl, 4, () => {});
  const measures = new DropMeasures(target, opts, control, say);
  try {
    const ttlSeconds = 6 * 3600;
    const tokens = await Promise.all(
      Array.from({ length: opts.buyers }, (_, n) =>
        signBuyerToken(target.buyerSecret, `${sku}-buyer-${n}`, { ttlSeconds }),
      ),
    );
    const plans = planBuyers(opts);
    // With bots in the crowd the product has the drop's rules: the bot check and the address limit.
    const rules = new SaleRules(opts.mix.bot > 0, api);
    await measures.prepare(signal);
    await measures.start();
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
    // A room that follows the Stripe budget admits at about its default pace (a sandbox key's, 20/s).
    const roomMs = opts.room ? (opts.buyers / (opts.room.admitPerSecond ?? 20)) * 1500 : 0;
    // Units come back after a lapse and may lapse again; each fault costs the sale some seconds (a
    // restart, a saga going on elsewhere). The baseline keeps the same deadline as its faulted run.
    const saleDeadline =
      opts.arrivalSeconds * 1000 + Math.max(3 * holdMs, 30_000) + roomMs + opts.faults.length * 10_000;
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
      while (sampling && !signal.aborted) {
        const next = Date.now() + SAMPLE_EVERY_MS;
        measures.sample();
        if (recorder.now() >= -leadMs) await sample();
        if (recorder.now() >= 0 && stage === 'pre-queue') stage = 'selling';
        await sleep(next - Date.now());
      }
    })();
    recorder.watchLoop(true);
    const everyone = Promise.all(
      recorder.buyers.map((b, n) =>
        runBuyer(ctx, b, tokens[n], plans[n]).catch((err: Error) => {
          b.outcome = `error ${err.message}`;
          b.phase = 'done';
        }),
      ),
    );
    if (o.withFaults) measures.startFaults(recorder, signal);
    const abuser = opts.abuser
      ? new Abuser(
          target.apiUrls,
          sku,
          `Bearer ${await signBuyerToken(target.buyerSecret, `${sku}-abuser`, { ttlSeconds })}`,
        )
      : undefined;
    abuser?.start(opening, opening + saleDeadline, signal);
    const watchStage = setInterval(() => {
      const t = recorder.tally();
      if (stage === 'selling' && t.arriving === 0 && t.queued + t.buying + t.admitted + t.holding === 0)
        stage = 'settling';
    }, 250);
    await Promise.race([
      everyone,
      new Promise((_, reject) => signal.addEventListener('abort', () => reject(signal.reason as Error))),
    ]);
    clearInterval(watchStage);
    sampling = false;
    await sampler;
    await sample();
    const endedAt = recorder.now();
    recorder.watchLoop(false);
    stage = 'checking';
    progress.stop();
    const measured = await measures.finish({ recorder, sku, sales: product?.sold ?? 0 });
    const abuse = await abuser?.finish();

    if (opts.pauseBeforeCheck) await pauseBeforeCheck(opts.pauseBeforeCheck, sku, say, signal);
    say('checking the invariants...');
    // Asked again for a while: one answer lost to a killed API or a per-address limit is not a failed check.
    const counts = await readProduct(api, sku, 20);
    if (!counts) throw new Error(`GET /v1/products/${sku} did not answer 200 in 20 attempts`);
    const checks = await checkInvariants({
      sku,
      buyers: recorder.buyers,
      product: counts,
      stripe: target.stripe,
      db: target.db,
      temporal: target.temporal,
      abuse,
      crowdAnswers: recorder.latencyByAnswer().map((l) => ({ answer: l.answer, count: l.count })),
      ...(measured.temporalActions?.versions ? { versions: measured.temporalActions.versions } : {}),
    });
    return {
      sku,
      startedAt,
      recorder,
      timeline,
      checks,
      counts,
      endedAt,
      measured,
      errorTimes: measures.errorTimes,
      ...(rules.on ? { rules } : {}),
      ...(abuse ? { abuse } : {}),
    };
  } finally {
    for (const client of [api, poll, watch, emulator, control]) client.close();
  }
}
