// Faults in the middle of a drop, on a schedule the report shows: `kill -9` of an API process (its
// buyers' requests go to the other through the balancer), `kill -9` of a worker (its sagas go on in
// the other), a restart of the Temporal server, and Stripe misbehaving for a while (the emulator's
// faults: a share of calls failing 500, 503 and 429, answers lost after the work was done, webhooks
// sent twice and out of order). Then, per fault, how far it moved the drop.
import type { Cluster } from '../dev/cluster';
import { sleep, type DrillHttp } from './http';

export const FAULT_KINDS = ['api', 'worker', 'temporal', 'stripe', 'deploy'] as const;
export type FaultKind = (typeof FAULT_KINDS)[number];

export const FAULT_MEANING: Record<FaultKind, string> = {
  api: 'kill -9 of an API process (not restarted: the other APIs carry on)',
  worker: 'kill -9 of a worker (not restarted: its sagas go on in the others)',
  temporal: 'the Temporal server stopped and started again',
  stripe:
    'Stripe failing for a while: 10 % of calls 500, 5 % 503, 5 % 429, 5 % answered 500 after the work was done; webhooks sent twice, shuffled',
  deploy:
    'a rolling deploy under Worker Versioning: new workers of the next version start and it is set current; the old workers finish the sagas pinned to theirs, then stop (SIGTERM)',
};

export interface FaultPlan {
  kind: FaultKind;
  /** Seconds after the opening. */
  at: number;
  /** How long a Stripe fault lasts, seconds. */
  seconds?: number;
}

export interface FaultRecord extends FaultPlan {
  /** What was hit (`api-1`, `worker-1`, `temporal`, `stripe`). */
  target: string;
  /** ms since the opening: when it began and when it was over (the process gone, the server back, Stripe well). */
  startedAt: number;
  endedAt: number;
  detail: string;
  error?: string;
}

const STRIPE_SECONDS = 5;

/** `api@8,worker@12,stripe@4:5` (kind@seconds[:duration]); `none` for no faults. */
export function parseFaults(raw: string): FaultPlan[] {
  if (raw.trim() === 'none') return [];
  return raw
    .split(',')
    .filter(Boolean)
    .map((part) => {
      const m = /^([a-z]+)@(\d+(?:\.\d+)?)(?::(\d+(?:\.\d+)?))?$/.exec(part.trim());
      if (!m || !(FAULT_KINDS as readonly string[]).includes(m[1]))
        throw new Error(`"${part}" is not kind@seconds[:duration] with kind one of ${FAULT_KINDS.join(', ')}`);
      const kind = m[1] as FaultKind;
      if (m[3] !== undefined && kind !== 'stripe') throw new Error(`"${part}": only a stripe fault has a duration`);
      return { kind, at: Number(m[2]), ...(kind === 'stripe' ? { seconds: Number(m[3] ?? STRIPE_SECONDS) } : {}) };
    })
    .sort((a, b) => a.at - b.at);
}

/**
 * With --cluster and no --faults: all four, spread over the selling (20, 40, 60 and 80 % of twice the
 * arrival window, at least 10 s), a few seconds apart so that each one's effect can be told apart.
 */
export function defaultFaults(arrivalSeconds: number): FaultPlan[] {
  const span = Math.max(10, 2 * arrivalSeconds);
  const at = (share: number) => Math.round(span * share * 10) / 10;
  return [
    { kind: 'stripe', at: at(0.2), seconds: Math.max(1, Math.round(span * 0.15)) },
    { kind: 'api', at: at(0.4) },
    { kind: 'worker', at: at(0.6) },
    { kind: 'temporal', at: at(0.8) },
  ];
}

export function describeFaults(faults: FaultPlan[]): string {
  if (!faults.length) return 'no faults';
  return faults.map((f) => `${f.kind}@${f.at}s${f.seconds !== undefined ? ` for ${f.seconds}s` : ''}`).join(', ');
}

/** The emulator's faults for a Stripe window: shares drawn per call, seeded so a seed replays them. */
function stripeFaults(seed: number): object[] {
  return [
    { path: '/v1', status: 500, rate: 0.1, seed },
    { path: '/v1', status: 503, rate: 0.05 / 0.9, seed: seed + 1 },
    { path: '/v1', status: 429, rate: 0.05 / 0.85, seed: seed + 2 },
    { path: '/v1', status: 500, rate: 0.05 / 0.8, afterServing: true, seed: seed + 3 },
  ];
}

export interface FaultContext {
  now: () => number;
  cluster?: Cluster;
  emulator: DrillHttp;
  seed: number;
  /** Called just before a process is killed (the CPU meter reads it one last time). */
  beforeKill: () => void;
  say: (line: string) => void;
  signal: AbortSignal;
  /** The Worker Deployment's name when a deploy is planned (the cluster runs versioned workers). */
  deployment?: string;
}

/** Runs the schedule; resolves with what happened once the last fault is over (never rejects). */
export async function runFaults(plans: FaultPlan[], ctx: FaultContext): Promise<FaultRecord[]> {
  let apis = 0;
  let workers = 0;
  const one = async (plan: FaultPlan): Promise<FaultRecord> => {
    await sleep(plan.at * 1000 - ctx.now());
    const startedAt = ctx.now();
    const target = plan.kind === 'api' ? `api-${++apis}` : plan.kind === 'worker' ? `worker-${++workers}` : plan.kind;
    const record = (detail: string, error?: string): FaultRecord => ({
      ...plan,
      target,
      startedAt,
      endedAt: ctx.now(),
      detail,
      ...(error ? { error } : {}),
    });
    if (ctx.signal.aborted) return record('not run: the drill stopped', 'aborted');
    ctx.say(`fault at ${(startedAt / 1000).toFixed(1)} s: ${plan.kind} (${target})`);
    try {
      switch (plan.kind) {
        case 'api':
        case 'worker':
          ctx.beforeKill();
          await ctx.cluster!.kill(target);
          return record(`${target} killed with SIGKILL`);
        case 'temporal':
          ctx.beforeKill();
          await ctx.cluster!.restartTemporal();
          return record(`stopped and answering again after ${((ctx.now() - startedAt) / 1000).toFixed(1)} s`);
        case 'stripe':
          return record(await stripeWindow(plan.seconds ?? STRIPE_SECONDS, ctx));
        case 'deploy': {
          const deploy = await ctx.cluster!.deploy();
          const current = `${deploy.started.join(', ')} started as ${deploy.buildId}, set current after ${((ctx.now() - startedAt) / 1000).toFixed(1)} s`;
          // Retired once no saga pinned to the old version is open (or when the drill stops).
          void retireWhenDrained(ctx, deploy.from, deploy.draining).then(
            (at) =>
              ctx.say(
                at === null
                  ? `deploy: ${deploy.draining.join(', ')} still serving sagas at the drill's end`
                  : `deploy: ${deploy.draining.join(', ')} drained and stopped at ${(at / 1000).toFixed(1)} s`,
              ),
            (err: Error) => ctx.say(`deploy: retiring ${deploy.draining.join(', ')} failed: ${err.message}`),
          );
          return record(`${current}; ${deploy.draining.join(', ')} draining`);
        }
      }
    } catch (err) {
      return record('failed', (err as Error).message);
    }
  };
  return Promise.all(plans.map(one));
}

async function stripeWindow(seconds: number, ctx: FaultContext): Promise<string> {
  const control = async (method: string, path: string, body?: unknown) => {
    const r = await ctx.emulator.call(method, path, `emulator ${path}`, body === undefined ? {} : { body });
    if (r.status >= 300) throw new Error(`${method} ${path}: ${r.status} ${JSON.stringify(r.body)}`);
    return r.body;
  };
  for (const f of stripeFaults(ctx.seed)) await control('POST', '/_emulator/faults', f);
  await control('POST', '/_emulator/webhooks', { duplicate: 2, shuffle: true });
  await sleep(seconds * 1000);
  const armed = (await control('GET', '/_emulator/faults')).data as Array<{
    status: number;
    hits: number;
    afterServing: boolean;
  }>;
  await control('DELETE', '/_emulator/faults');
  await control('POST', '/_emulator/webhooks', { duplicate: 1, shuffle: false });
  const hits = armed.map((f) => `${f.hits} × ${f.status}${f.afterServing ? ' after serving' : ''}`).join(', ');
  return `${seconds} s of faults: ${hits || 'none hit'}; webhooks twice and shuffled meanwhile`;
}

/** The Worker Deployment of a cluster whose drill plans a deploy (its workers run versioned). */
export const DRILL_DEPLOYMENT = 'flash-sale-drill';

/** How often a deploy asks whether the old version's sagas have all ended. */
const DRAIN_POLL_MS = 2_000;

/** Stops the old version's workers once no purchase saga is pinned to it; the time (ms since the opening), or null. */
async function retireWhenDrained(ctx: FaultContext, from: string, workers: string[]): Promise<number | null> {
  const client = ctx.cluster!.temporalClient();
  const query = `WorkflowType="purchaseWorkflow" AND ExecutionStatus="Running" AND TemporalWorkerDeploymentVersion="${ctx.deployment}:${from}"`;
  while (!ctx.signal.aborted) {
    const { count } = await client.workflow.count(query);
    if (count === 0) {
      await ctx.cluster!.retire(workers);
      return ctx.now();
    }
    await sleep(DRAIN_POLL_MS);
  }
  return null;
}

/** How far one fault moved the drop. */
export interface FaultEffect {
  /**
   * Seconds the checkouts fell further behind the same crowd's run without faults (the baseline) from
   * this fault to the next one, at most EFFECT_WINDOW_MS: with c(n) the time of the n-th checkout,
   * the lag c(n) − c_baseline(n) then less the lag when it began. Null without a baseline.
   */
  delaySeconds: number | null;
  /** Answers to buyers that were 5xx or network errors, from the fault until the next one (10 s at most). */
  errors: number;
}

/** How long after a fault its effect is looked for (the tail of a drop differs from run to run anyway). */
const EFFECT_WINDOW_MS = 15_000;

/** The lag of the faulted run behind the baseline at the last checkout before `t`, ms (0 before the first). */
function lagAt(t: number, checkouts: number[], baseline: number[]): number {
  let n = 0;
  while (n < checkouts.length && checkouts[n] < t) n++;
  if (n === 0 || baseline.length === 0) return 0;
  return checkouts[n - 1] - baseline[Math.min(n, baseline.length) - 1];
}

/** Each fault's effect; `checkouts`, `baseline` and `errorTimes` are ms since the opening. */
export function faultEffects(
  faults: FaultRecord[],
  checkouts: number[],
  errorTimes: number[],
  baseline?: number[],
): FaultEffect[] {
  const mine = [...checkouts].sort((a, b) => a - b);
  const theirs = baseline && [...baseline].sort((a, b) => a - b);
  const last = mine.length ? mine[mine.length - 1] + 1 : 0;
  return faults.map((f, i) => {
    const next = faults[i + 1]?.startedAt ?? Infinity;
    const until = Math.min(next, f.startedAt + 10_000);
    const errors = errorTimes.filter((e) => e >= f.startedAt && e < until).length;
    if (!theirs) return { delaySeconds: null, errors };
    const end = Math.min(next, last, f.startedAt + EFFECT_WINDOW_MS);
    const shift = lagAt(end, mine, theirs) - lagAt(f.startedAt, mine, theirs);
    return { delaySeconds: Math.round(shift / 100) / 10, errors };
  });
}
