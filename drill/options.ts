// The drill's command line: what to rehearse (buyers, units, hold, room, mix) and where (the local
// stack, or a running deployment with --base). Bad flags are a UsageError: printed with the usage, exit 2.
import path from 'node:path';
import { parseArgs } from 'node:util';
import { MAX_HOLD_SECONDS } from '../vocabulary/limits';
import { defaultFaults, parseFaults, type FaultPlan } from './faults';

/** What a buyer who got a checkout does with it. */
export const BEHAVIOURS = ['pay', 'late', 'decline', 'delayed', 'delayed_fail', 'abandon', 'bot'] as const;
export type Behaviour = (typeof BEHAVIOURS)[number];

export const BEHAVIOUR_MEANING: Record<Behaviour, string> = {
  pay: 'pays by card at once',
  late: 'pays after the hold lapsed',
  decline: 'is declined once or twice, then pays',
  delayed: 'pays by bank debit, which succeeds',
  delayed_fail: 'pays by bank debit, which fails',
  abandon: 'never pays',
  bot: "a bot farm's account: no bot-check solution or a reused one, ships to the farm's one address",
};

export const DEFAULT_MIX: Record<Behaviour, number> = {
  pay: 0.6,
  late: 0.05,
  decline: 0.1,
  delayed: 0.1,
  delayed_fail: 0.05,
  abandon: 0.1,
  // Last, and 0 unless asked for: a drill without bots draws the same crowd from a seed as before.
  bot: 0,
};

export interface Room {
  admitPerSecond: number;
  maxActive: number;
}

export interface DrillOptions {
  buyers: number;
  units: number;
  holdSeconds: number;
  room?: Room;
  /** Buyers arrive over this many seconds after the opening (most of them in the first quarter). */
  arrivalSeconds: number;
  /** With a room: the sale opens this long after the product is created; `early` of the buyers join before. */
  opensInSeconds: number;
  early: number;
  mix: Record<Behaviour, number>;
  seed: number;
  /** HTTP sockets to the API (requests beyond wait for one). */
  concurrency: number;
  /** The local stack's BOT_CHECK_MAX_NUMBER: the cost of the challenge the simulated humans solve. */
  botCheckMaxNumber: number;
  /** After the last buyer acted, how long to wait at most for every saga to settle. */
  settleSeconds: number;
  out: string;
  base?: string;
  adminToken?: string;
  buyerTokenSecret?: string;
  emulatorUrl?: string;
  /** The production shape instead of the local stack (dev/cluster.ts). */
  cluster?: { apis: number; workers: number; balancer: boolean; crowdApis: number };
  /** Faults during the drop, by seconds after the opening. */
  faults: FaultPlan[];
  /** With faults: run the same crowd without them first, on the same deployment, to measure them by. */
  baseline: boolean;
  /** The emulator's limit for the account and each endpoint, requests a second (0: none); unset: as it is. */
  stripeRate?: number;
  /** Writes this file when the sale is over and waits until it is deleted before checking. */
  pauseBeforeCheck?: string;
  /** With --cluster: one client hammers the sale from one address of its own (drill/abuser.ts). */
  abuser: boolean;
  /** With --cluster: purchase requests and page reads one address may make a second, per API process. */
  addressLimit: number;
  verbose: boolean;
}

export class UsageError extends Error {}

export const USAGE = `usage: npm run drill -- [options]

Rehearses a drop: creates a product, releases simulated buyers at it (join the room if any, buy,
pay at once, late, after a decline, by bank debit, or abandon), shows progress, checks that
nothing was oversold or lost, and writes report.html and summary.json.

  --buyers N              buyers (default 10000)
  --units M               units on sale (default 600)
  --hold S                hold seconds (default 30)
  --room R,A              a waiting room admitting R buyers a second, at most A inside (default: none)
  --arrival S             buyers arrive over S seconds, most of them early (default 10)
  --opens-in S            with --room: the sale opens S seconds after the product is created (default 5)
  --early F               with --room: the share of buyers that joins before the opening (default 0.1)
  --mix k=v,...           what winners do: ${BEHAVIOURS.join(', ')} (default ${Object.entries(DEFAULT_MIX)
    .map(([k, v]) => `${k}=${v}`)
    .join(',')}); shares are normalised
  --seed N                the random seed: the same seed, the same crowd (default: the time)
  --concurrency C         HTTP sockets to the API for the buyers' calls, and as many for their polls
                          (default 2048: a crowd's requests should not queue in the drill; the
                          headline says what they waited for a socket)
  --bot-check-max N       the local stack's BOT_CHECK_MAX_NUMBER (default 50: the simulated humans solve
                          on this machine too); with bot=<share> in --mix the product has the bot check,
                          maxPerAddress 1 and ships to FR, every human solves and ships to an address of
                          its own, and the report counts what each rule stopped
  --settle S              how long to wait at most for the sagas to settle (default 60 + hold)
  --out DIR               where the report goes (default .data/drills/<time>/)
  --cluster               the production shape: Postgres, the real Temporal server on it, two APIs
                          behind HAProxy (spread over without one), two workers, the emulator; the
                          report adds the CPU each kind of process spent per sale and per refused buyer
    --apis N, --workers N the cluster's API and worker processes (default 2 each)
    --no-balancer         no HAProxy even where installed: the buyers are spread over the APIs
    --crowd-apis K        the first K APIs serve the waiting crowd (room joins and polls, queue
                          pages, product reads) and the others the buyers (purchases, their pages,
                          Stripe's webhooks), each lane falling back on every API (default 0: every
                          API serves every request); needs the balancer and K below --apis
    --abuser              one more client hammers the sale from an address of its own (purchases
                          and the product's page, far past the per-address limits, which the
                          cluster keeps on: the crowd comes from many loopback addresses); the
                          check: it was limited, and the crowd hardly ever (1 %)
    --address-limit N     the cluster's per-address limits: purchase requests and page reads a
                          second per address and API process (default 100, production's)
  --faults LIST           faults mid-drop, kind@seconds after the opening (stripe@S:D lasts D s):
                          api (kill -9 of one API), worker (kill -9 of one worker), temporal (restart),
                          stripe (the emulator failing calls and shuffling webhooks), deploy (a
                          rolling deploy of a new worker version, Worker Versioning); none for none
                          (default with --cluster: all four, e.g. stripe@4:3,api@8,worker@12,temporal@16
                          for a 10 s arrival; without --cluster: none, and only stripe is possible)
  --no-baseline           with faults: skip the same drop without them that runs first (the faults'
                          delays are measured against it; the drill then takes half as long)
  --stripe-rate N         the emulator limits Stripe calls to N a second, for the account and each
                          endpoint (0: no limit; default: the emulator's own, the sandbox's 25/s);
                          the stack it starts gets the budget N (STRIPE_MAX_REQUESTS_PER_SECOND and
                          STRIPE_MAX_SESSIONS_PER_SECOND), as for an account limited to N
  --base URL              drill a running deployment instead of starting the local stack; needs
    --admin-token T       (or ADMIN_TOKEN),
    --buyer-token-secret  (or BUYER_TOKEN_SECRET) to sign the buyers' tokens, and
    --emulator URL        (or STRIPE_API_URL) the payments emulator the deployment uses.
                          DATABASE_URL and TEMPORAL_ADDRESS (TEMPORAL_NAMESPACE) enable the checks
                          from the inside (ledger, sagas); without them those are skipped.
  --pause-before-check F  write file F when the sale is over, and wait until it is deleted
  --verbose               echo the local stack's output

Exit 0 when every invariant holds, 1 when one fails (each failure is named), 2 on a bad command line.`;

function num(name: string, raw: string | undefined, dflt: number, o: { int?: boolean; min?: number; max?: number }) {
  if (raw === undefined) return dflt;
  const n = Number(raw);
  if (raw.trim() === '' || !Number.isFinite(n) || (o.int && !Number.isInteger(n)))
    throw new UsageError(`${name} must be a${o.int ? 'n integer' : ' number'}, got "${raw}"`);
  if (o.min !== undefined && n < o.min) throw new UsageError(`${name} must be at least ${o.min}, got ${n}`);
  if (o.max !== undefined && n > o.max) throw new UsageError(`${name} must be at most ${o.max}, got ${n}`);
  return n;
}

/** `pay=0.6,late=0.1`: the named shares replace the defaults, then all are scaled to sum to 1. */
export function parseMix(raw: string | undefined): Record<Behaviour, number> {
  const mix = { ...DEFAULT_MIX };
  if (raw !== undefined) {
    for (const part of raw.split(',').filter(Boolean)) {
      const [key, value, ...rest] = part.split('=');
      if (!(BEHAVIOURS as readonly string[]).includes(key) || value === undefined || rest.length)
        throw new UsageError(`--mix: "${part}" is not one of ${BEHAVIOURS.map((b) => `${b}=<share>`).join(', ')}`);
      mix[key as Behaviour] = num(`--mix ${key}`, value, 0, { min: 0 });
    }
  }
  const sum = BEHAVIOURS.reduce((s, b) => s + mix[b], 0);
  if (sum <= 0) throw new UsageError('--mix: the shares add up to 0');
  for (const b of BEHAVIOURS) mix[b] /= sum;
  return mix;
}

function parseRoom(raw: string | undefined): Room | undefined {
  if (raw === undefined) return undefined;
  const parts = raw.split(',');
  if (parts.length !== 2) throw new UsageError(`--room must be admitPerSecond,maxActive (e.g. 50,500), got "${raw}"`);
  return {
    admitPerSecond: num('--room admitPerSecond', parts[0], 0, { min: 1 }),
    maxActive: num('--room maxActive', parts[1], 0, { int: true, min: 1 }),
  };
}

/** --cluster and its sizes, and the faults (the processes only the cluster can lose). */
function readTopology(
  opts: DrillOptions,
  v: {
    cluster?: boolean;
    apis?: string;
    workers?: string;
    'no-balancer'?: boolean;
    'crowd-apis'?: string;
    faults?: string;
    base?: string;
  },
): void {
  if (v.cluster) {
    if (v.base) throw new UsageError('--cluster starts its own deployment: it does not go with --base');
    const apis = num('--apis', v.apis, 2, { int: true, min: 1, max: 16 });
    opts.cluster = {
      apis,
      workers: num('--workers', v.workers, 2, { int: true, min: 1, max: 16 }),
      balancer: !v['no-balancer'],
      crowdApis: num('--crowd-apis', v['crowd-apis'], 0, { int: true, min: 0, max: 15 }),
    };
    if (opts.cluster.crowdApis >= apis && opts.cluster.crowdApis > 0)
      throw new UsageError(`--crowd-apis ${opts.cluster.crowdApis} would leave none of the ${apis} APIs to the buyers`);
    if (opts.cluster.crowdApis > 0 && !opts.cluster.balancer)
      throw new UsageError('--crowd-apis needs the balancer (lanes are paths it routes): not with --no-balancer');
  } else if (v.apis !== undefined || v.workers !== undefined || v['no-balancer'] || v['crowd-apis'] !== undefined) {
    throw new UsageError('--apis, --workers, --no-balancer and --crowd-apis go with --cluster');
  }
  try {
    opts.faults =
      v.faults !== undefined ? parseFaults(v.faults) : opts.cluster ? defaultFaults(opts.arrivalSeconds) : [];
  } catch (err) {
    throw new UsageError(`--faults: ${(err as Error).message}`);
  }
  const killed = (kind: string) => opts.faults.filter((f) => f.kind === kind).length;
  if (!opts.cluster && opts.faults.some((f) => f.kind !== 'stripe'))
    throw new UsageError(
      '--faults: api, worker, temporal and deploy faults need --cluster (the local stack has one of each)',
    );
  if (opts.cluster && killed('api') >= opts.cluster.apis)
    throw new UsageError(`--faults: ${killed('api')} API kill(s) would leave none of the ${opts.cluster.apis} APIs`);
  if (opts.cluster && killed('worker') >= opts.cluster.workers)
    throw new UsageError(
      `--faults: ${killed('worker')} worker kill(s) would leave none of the ${opts.cluster.workers} workers`,
    );
}

/** A folder name from the time: 2026-12-01T10-15-30Z. */
export function stamp(d = new Date()): string {
  return d
    .toISOString()
    .replace(/\.\d+Z$/, 'Z')
    .replace(/:/g, '-');
}

export function readOptions(argv: string[], env: NodeJS.ProcessEnv, cwd = process.cwd()): DrillOptions | 'help' {
  let values;
  try {
    ({ values } = parseArgs({
      args: argv,
      strict: true,
      allowPositionals: false,
      options: {
        buyers: { type: 'string' },
        units: { type: 'string' },
        hold: { type: 'string' },
        room: { type: 'string' },
        arrival: { type: 'string' },
        'opens-in': { type: 'string' },
        early: { type: 'string' },
        mix: { type: 'string' },
        seed: { type: 'string' },
        concurrency: { type: 'string' },
        'bot-check-max': { type: 'string' },
        settle: { type: 'string' },
        out: { type: 'string' },
        base: { type: 'string' },
        'admin-token': { type: 'string' },
        'buyer-token-secret': { type: 'string' },
        emulator: { type: 'string' },
        'pause-before-check': { type: 'string' },
        cluster: { type: 'boolean' },
        apis: { type: 'string' },
        'crowd-apis': { type: 'string' },
        workers: { type: 'string' },
        'no-balancer': { type: 'boolean' },
        abuser: { type: 'boolean' },
        'address-limit': { type: 'string' },
        faults: { type: 'string' },
        'stripe-rate': { type: 'string' },
        'no-baseline': { type: 'boolean' },
        verbose: { type: 'boolean' },
        help: { type: 'boolean', short: 'h' },
      },
    }));
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
  if (values.help) return 'help';
  const holdSeconds = num('--hold', values.hold, 30, { int: true, min: 1, max: MAX_HOLD_SECONDS });
  const room = parseRoom(values.room);
  const opts: DrillOptions = {
    buyers: num('--buyers', values.buyers, 10_000, { int: true, min: 1, max: 1_000_000 }),
    units: num('--units', values.units, 600, { int: true, min: 1, max: 1_000_000 }),
    holdSeconds,
    room,
    arrivalSeconds: num('--arrival', values.arrival, 10, { min: 0, max: 3600 }),
    opensInSeconds: num('--opens-in', values['opens-in'], 5, { min: 1, max: 3600 }),
    early: room ? num('--early', values.early, 0.1, { min: 0, max: 1 }) : 0,
    mix: parseMix(values.mix),
    seed: num('--seed', values.seed, Date.now() % 2 ** 31, { int: true, min: 0, max: 2 ** 32 - 1 }),
    concurrency: num('--concurrency', values.concurrency, 2048, { int: true, min: 1, max: 10_000 }),
    botCheckMaxNumber: num('--bot-check-max', values['bot-check-max'], 50, { int: true, min: 1, max: 10_000_000 }),
    settleSeconds: num('--settle', values.settle, 60 + holdSeconds, { min: 1, max: 86_400 }),
    out: path.resolve(cwd, values.out ?? path.join('.data', 'drills', stamp())),
    base: values.base?.replace(/\/+$/, ''),
    pauseBeforeCheck: values['pause-before-check'],
    verbose: values.verbose ?? false,
    faults: [],
    baseline: !values['no-baseline'],
    abuser: values.abuser ?? false,
    addressLimit: num('--address-limit', values['address-limit'], 100, { int: true, min: 1, max: 1_000_000 }),
  };
  if (values['stripe-rate'] !== undefined)
    opts.stripeRate = num('--stripe-rate', values['stripe-rate'], 0, { min: 0, max: 100_000 });
  readTopology(opts, values);
  if ((opts.abuser || values['address-limit'] !== undefined) && !opts.cluster)
    throw new UsageError(
      '--abuser and --address-limit go with --cluster (the deployment whose per-address limits are on)',
    );
  if (values.early !== undefined && !room)
    throw new UsageError('--early needs --room (a pre-queue is a room before its opening)');
  if (opts.base) {
    if (!/^https?:\/\/[^/]+$/.test(opts.base)) throw new UsageError('--base must look like http://host:port');
    opts.adminToken = values['admin-token'] ?? env.ADMIN_TOKEN;
    opts.buyerTokenSecret = values['buyer-token-secret'] ?? env.BUYER_TOKEN_SECRET;
    opts.emulatorUrl = (values.emulator ?? env.STRIPE_API_URL)?.replace(/\/+$/, '');
    if (!opts.adminToken) throw new UsageError('--base needs --admin-token (or ADMIN_TOKEN)');
    if (!opts.buyerTokenSecret)
      throw new UsageError("--base needs --buyer-token-secret (or BUYER_TOKEN_SECRET) to sign the buyers' tokens");
    if (!opts.emulatorUrl)
      throw new UsageError('--base needs --emulator (or STRIPE_API_URL): the buyers pay through the payments emulator');
  } else if (values['admin-token'] || values['buyer-token-secret'] || values.emulator) {
    throw new UsageError('--admin-token, --buyer-token-secret and --emulator go with --base');
  }
  return opts;
}
