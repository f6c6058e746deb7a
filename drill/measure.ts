// What a drill measures beside the buyers' own records: the faults it sets off on schedule and how far
// each moved the drop, the CPU each kind of process spent (with --cluster) per sale and per refused
// buyer, the Temporal actions of the drop's workflows, Stripe's calls, 429s and floor, and the APIs'
// own time per route.
import fs from 'node:fs';
import type { ProcessKind } from '../dev/cluster';
import { connectionsNow, dbGrowth, dbSnapshot, type DbGrowth, type DbSnapshot } from '../dev/db-footprint';
import { balancerRouteTimes } from './balancer-times';
import { countActions, versionFigures, type ActionCount, type ActionType } from './actions';
import { CpuMeter, type MemoryPeak } from './cpu';
import { DRILL_DEPLOYMENT, faultEffects, runFaults, type FaultEffect, type FaultRecord } from './faults';
import { sleep, type DrillHttp } from './http';
import type { LogVolume } from './log-tally';
import type { DrillOptions } from './options';
import { dropRouteTimes, readHistograms, type Histograms, type RouteTime } from './server-latency';
import type { Recorder } from './recorder';
import {
  readRateLimits,
  sessionsOpened,
  deliverWebhooksInParallel,
  setStripeRate,
  stripeFigures,
  type RateLimits,
  type StripeFigures,
} from './stripe-usage';
import type { Target } from './target';

/** With --cluster: how long the processes are watched idle before the drop, for their idle CPU. */
const IDLE_WINDOW_MS = 3000;

export interface FaultSummary extends FaultRecord, FaultEffect {
  /** A worker's fault: the sagas whose workflow task timed out after it, and when each went on. */
  stalledSagas?: {
    count: number;
    resumedP50Seconds: number | null;
    resumedMaxSeconds: number | null;
    notResumed: number;
  };
}

export interface CostRow {
  kind: ProcessKind;
  processes: string[];
  /** CPU-seconds over the drop. */
  cpuSeconds: number;
  /** CPU-seconds a second the kind used idle, before the drop. */
  idlePerSecond: number;
  /** `cpuSeconds` less the idle rate over the drop: what the crowd cost. */
  loadSeconds: number;
  /** `loadSeconds` ÷ sales and ÷ refused buyers, ms (each charges the whole load to one kind of buyer). */
  perSaleMs: number | null;
  perRefusedMs: number | null;
}

export interface CostFigures {
  /** From the product's creation to the last buyer's outcome. */
  windowSeconds: number;
  sales: number;
  refused: number;
  sagas: number;
  rows: CostRow[];
  /** Cores busy on average over the drop, all kinds (the drill's own buyers not included). */
  averageCores: number;
  /** The drill itself (its buyers' HTTP and JSON), for what was left of the machine. */
  drillCpuSeconds: number;
  /**
   * With --crowd-apis K: the APIs' CPU-seconds by lane, each less its share of the APIs' idle rate: the
   * waiting crowd's (room joins and polls, queue pages, product reads) and the buyers' (the rest).
   */
  apiLanes?: { crowd: number; buyers: number };
}

export interface ActionFigures {
  workflows: number;
  /** Distinct purchase workflows (more than the checkouts when some never got that far). */
  sagas: number;
  total: number;
  byType: Record<ActionType, number>;
  perSaga: number | null;
  perSale: number | null;
  peakPerSecond: number;
  perSecond: ActionCount['perSecond'];
  /** Under Worker Versioning (a deploy fault): sagas per build, and those that ran on two. */
  versions?: { byBuild: Record<string, number>; moved: string[] };
}

/** The same crowd's run without faults, before the faulted one (--baseline). */
export interface BaselineFigures {
  sku: string;
  secondsToSellOut: number | null;
  checkouts: number;
  lastCheckoutSeconds: number | null;
  invariantsHeld: boolean;
}

/** What the drop left besides CPU (issue 31, item 2): memory, logs and, with --cluster, Postgres's growth. */
export interface Footprint {
  /** Each process's largest resident memory over the drop (with --cluster). */
  memory: MemoryPeak[];
  /** Lines and bytes logged per kind of process over the drop. */
  logs: LogVolume[];
  /** The WAL written and the rows and bytes gained, per database (the app's, Temporal's two). */
  postgres?: DbGrowth;
  /** The most backends each database had at once, read every 5 s. */
  peakConnections?: Record<string, number>;
}

export interface Measured {
  faults: FaultSummary[];
  /** The APIs' own time per route over the drop, from their /metrics (when the drill started them). */
  apiTimes?: RouteTime[];
  /** The balancer's time per route over the drop, from its line per answer (with --cluster and HAProxy). */
  balancerTimes?: RouteTime[];
  cost?: CostFigures;
  footprint?: Footprint;
  temporalActions?: ActionFigures;
  stripe?: StripeFigures;
  baseline?: BaselineFigures;
}

/**
 * Measures the faults against the baseline: each one's delay is how much further the faulted run's
 * checkouts fell behind the baseline's while it lasted (drill/faults.ts).
 */
export function againstBaseline(
  measured: Measured,
  checkouts: number[],
  errorTimes: number[],
  baseline: { figures: BaselineFigures; checkouts: number[] },
): Measured {
  const effects = faultEffects(measured.faults, checkouts, errorTimes, baseline.checkouts);
  return {
    ...measured,
    faults: measured.faults.map((f, i) => ({ ...f, delaySeconds: effects[i].delaySeconds })),
    baseline: baseline.figures,
  };
}

const round = (n: number, digits = 2) => Math.round(n * 10 ** digits) / 10 ** digits;

export class DropMeasures {
  private readonly meter?: CpuMeter;
  private idle = new Map<ProcessKind, number>();
  private startedAt = 0;
  private drillCpuAt = process.cpuUsage();
  private stripeBefore?: RateLimits;
  private faultsRun: Promise<FaultRecord[]> = Promise.resolve([]);
  private dbBefore?: DbSnapshot;
  private readonly peakConnections: Record<string, number> = {};
  private samples = 0;
  private histogramsBefore = new Map<string, Histograms>();
  /** When the buyers' API calls were answered 5xx or failed on the network, ms since the opening. */
  readonly errorTimes: number[] = [];

  constructor(
    private readonly target: Target,
    private readonly opts: DrillOptions,
    private readonly emulator: DrillHttp,
    private readonly say: (line: string) => void,
  ) {
    if (target.cluster) this.meter = new CpuMeter(() => target.cluster!.processes());
  }

  /** Before the product exists: the Stripe limit, and the processes' idle CPU. */
  async prepare(signal: AbortSignal): Promise<void> {
    if (this.opts.stripeRate !== undefined) await setStripeRate(this.emulator, this.opts.stripeRate);
    await deliverWebhooksInParallel(this.emulator);
    if (!this.meter) return;
    this.meter.begin();
    await sleep(IDLE_WINDOW_MS);
    if (signal.aborted) return;
    for (const [kind, { seconds }] of this.meter.totals()) this.idle.set(kind, seconds / (IDLE_WINDOW_MS / 1000));
  }

  /** The APIs this drill started (their /metrics is open on loopback); none against --base. */
  private metricsUrls(): string[] {
    return this.target.cluster?.apiUrls ?? (this.target.logs ? this.target.apiUrls : []);
  }

  /** The drop begins (the product is about to be created). */
  async start(): Promise<void> {
    this.histogramsBefore = await readHistograms(this.metricsUrls());
    this.meter?.begin();
    this.startedAt = Date.now();
    this.drillCpuAt = process.cpuUsage();
    this.stripeBefore = await readRateLimits(this.emulator);
    this.target.logs?.begin();
    const url = this.target.cluster?.databaseUrl;
    if (url) this.dbBefore = await dbSnapshot(url).catch(() => undefined);
  }

  /** Once a second, from the drill's sampler: a process killed later keeps what it used until now. */
  sample(): void {
    this.meter?.sample();
    const url = this.target.cluster?.databaseUrl;
    if (url && this.samples++ % 5 === 0) {
      void connectionsNow(url)
        .then((now) => {
          for (const [db, n] of Object.entries(now))
            this.peakConnections[db] = Math.max(this.peakConnections[db] ?? 0, n);
        })
        .catch(() => {});
    }
  }

  /** Each answer the drill records, with when it came (ms since the opening). */
  count(answer: string, at: number): void {
    if (/^(GET|POST) \/v1\/\S* (5\d\d|network error)/.test(answer)) this.errorTimes.push(at);
  }

  startFaults(recorder: Recorder, signal: AbortSignal): void {
    if (!this.opts.faults.length) return;
    this.faultsRun = runFaults(this.opts.faults, {
      now: () => recorder.now(),
      cluster: this.target.cluster,
      emulator: this.emulator,
      seed: this.opts.seed,
      beforeKill: () => this.meter?.sample(),
      say: this.say,
      signal,
      ...(this.opts.faults.some((f) => f.kind === 'deploy') ? { deployment: DRILL_DEPLOYMENT } : {}),
    });
  }

  /** After the buyers are done and before the checks (which make Stripe calls of their own). */
  async finish(o: { recorder: Recorder; sku: string; sales: number }): Promise<Measured> {
    const faults = await this.faultsRun;
    const totals = this.meter?.totals();
    const windowSeconds = (Date.now() - this.startedAt) / 1000;
    const drillCpu = process.cpuUsage(this.drillCpuAt);
    const buyers = o.recorder.buyers;
    const sagas = buyers.filter((b) => b.purchaseId).length;
    const refused = buyers.length - sagas;
    const checkoutTimes = buyers.filter((b) => b.checkoutAt !== undefined).map((b) => b.checkoutAt!);
    const stripeAfter = await readRateLimits(this.emulator);
    const measured: Measured = { faults: [] };
    const urls = this.metricsUrls();
    if (urls.length) measured.apiTimes = dropRouteTimes(this.histogramsBefore, await readHistograms(urls));
    const balancerLog = this.target.cluster?.balancerLog;
    if (balancerLog)
      measured.balancerTimes = balancerRouteTimes(fs.readFileSync(balancerLog, 'utf8'), this.startedAt, Date.now());
    measured.footprint = await this.footprint();
    if (this.stripeBefore && stripeAfter) {
      measured.stripe = stripeFigures({
        before: this.stripeBefore,
        after: stripeAfter,
        units: this.opts.units,
        sales: o.sales,
        sagas,
        checkouts: checkoutTimes.length,
        sessionsOpened: await sessionsOpened(this.target.stripe, o.sku),
        lastCheckoutMs: checkoutTimes.length ? Math.max(...checkoutTimes) : null,
      });
    }
    let actions: ActionCount | undefined;
    if (this.target.temporal) {
      this.say('counting the Temporal actions in the drop’s histories...');
      actions = await countActions(this.target.temporal, o.sku, o.recorder.t0);
      measured.temporalActions = {
        workflows: actions.workflows,
        total: actions.total,
        byType: actions.byType,
        sagas: actions.sagas,
        perSaga: actions.sagas ? round(actions.total / actions.sagas) : null,
        perSale: o.sales ? round(actions.total / o.sales) : null,
        peakPerSecond: actions.peakPerSecond,
        perSecond: actions.perSecond,
        ...(versionFigures(actions) ? { versions: versionFigures(actions) } : {}),
      };
    }
    const effects = faultEffects(faults, checkoutTimes, this.errorTimes);
    measured.faults = faults.map((f, i) => ({
      ...f,
      ...effects[i],
      ...(f.kind === 'worker' && actions ? { stalledSagas: stalls(actions, f.startedAt) } : {}),
    }));
    if (totals) {
      const rows: CostRow[] = [...totals].map(([kind, t]) => {
        const idlePerSecond = this.idle.get(kind) ?? 0;
        const loadSeconds = Math.max(0, t.seconds - idlePerSecond * windowSeconds);
        return {
          kind,
          processes: t.processes,
          cpuSeconds: round(t.seconds),
          idlePerSecond: round(idlePerSecond, 3),
          loadSeconds: round(loadSeconds),
          perSaleMs: o.sales ? round((loadSeconds * 1000) / o.sales, 1) : null,
          perRefusedMs: refused ? round((loadSeconds * 1000) / refused, 2) : null,
        };
      });
      measured.cost = {
        windowSeconds: round(windowSeconds, 1),
        sales: o.sales,
        refused,
        sagas,
        rows,
        averageCores: round(rows.reduce((n, r) => n + r.cpuSeconds, 0) / windowSeconds),
        drillCpuSeconds: round((drillCpu.user + drillCpu.system) / 1e6),
        ...this.apiLanes(windowSeconds),
      };
    }
    return measured;
  }

  /** The first `crowdApis` APIs (api-1 …) serve the crowd's lane (dev/cluster.ts). */
  private apiLanes(windowSeconds: number): Pick<CostFigures, 'apiLanes'> {
    const k = this.opts.cluster?.crowdApis ?? 0;
    if (!this.meter || k === 0) return {};
    const apis = [...this.meter.byProcess()].filter(([name]) => /^api-\d+$/.test(name));
    const idleEach = ((this.idle.get('api') ?? 0) * windowSeconds) / Math.max(1, apis.length);
    const lane = (crowd: boolean) =>
      round(
        apis
          .filter(([name]) => Number(name.slice(4)) <= k === crowd)
          .reduce((sum, [, seconds]) => sum + Math.max(0, seconds - idleEach), 0),
      );
    return { apiLanes: { crowd: lane(true), buyers: lane(false) } };
  }

  private async footprint(): Promise<Footprint> {
    const url = this.target.cluster?.databaseUrl;
    const after = url && this.dbBefore ? await dbSnapshot(url).catch(() => undefined) : undefined;
    return {
      memory: this.meter?.memoryPeaks() ?? [],
      logs: this.target.logs?.since() ?? [],
      ...(after && this.dbBefore ? { postgres: dbGrowth(this.dbBefore, after) } : {}),
      ...(url ? { peakConnections: { ...this.peakConnections } } : {}),
    };
  }
}

/** The workflow tasks that timed out after a worker was killed: those sagas were on it. */
function stalls(actions: ActionCount, killedAt: number): FaultSummary['stalledSagas'] {
  const hit = actions.taskTimeouts.filter((s) => s.timedOutAt >= killedAt && s.timedOutAt < killedAt + 60_000);
  const resumed = hit
    .filter((s) => s.resumedAt !== null)
    .map((s) => (s.resumedAt! - killedAt) / 1000)
    .sort((a, b) => a - b);
  return {
    count: new Set(hit.map((s) => s.workflowId)).size,
    resumedP50Seconds: resumed.length ? round(resumed[Math.floor((resumed.length - 1) / 2)], 1) : null,
    resumedMaxSeconds: resumed.length ? round(resumed[resumed.length - 1], 1) : null,
    notResumed: hit.length - resumed.length,
  };
}
