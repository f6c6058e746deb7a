import { parseArgs } from 'node:util';

// The flags (or environment) of `npm run bench:crowd`: see bench/crowd.ts.

const HELP = `usage: npm run bench:crowd -- [--buyers N] [--units M] [--concurrency C] [--respond-async] [--room] [--stripe-rate R [--stripe-budget B]] [--base URL --admin-token T]`;

export interface Options {
  buyers: number;
  units: number;
  concurrency: number;
  respondAsync: boolean;
  room: boolean;
  /**
   * The emulator's rate limit (requests/s, as Stripe's; 0: none, the emulator's full speed); unset:
   * the emulator's default (the sandbox's 25/s). With a value, the drop is run as bench/crowd-stripe.ts.
   */
  stripeRate?: number;
  /** STRIPE_MAX_REQUESTS_PER_SECOND for the stack: default the rate (10,000 at full speed), or the sandbox default unset. */
  stripeBudget?: number;
  base?: string;
  adminToken?: string;
}

function positiveInt(name: string, raw: string | undefined, dflt: number): number {
  if (raw === undefined || raw === '') return dflt;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1) throw new UsageError(`${name} must be a positive integer, got "${raw}"`);
  return n;
}

export class UsageError extends Error {}

function rates(rate: string | undefined, budget: string | undefined): Pick<Options, 'stripeRate' | 'stripeBudget'> {
  const nonNegative = (name: string, raw: string) => {
    const n = Number(raw);
    if (!Number.isInteger(n) || n < 0) throw new UsageError(`${name} must be an integer >= 0, got "${raw}"`);
    return n;
  };
  const stripeRate = rate === undefined || rate === '' ? undefined : nonNegative('--stripe-rate', rate);
  const given = budget === undefined || budget === '' ? undefined : positiveInt('--stripe-budget', budget, 1);
  if (stripeRate === undefined) return given ? { stripeBudget: given } : {};
  return { stripeRate, stripeBudget: given ?? (stripeRate === 0 ? 10_000 : stripeRate) };
}

export function readOptions(argv: string[], env: NodeJS.ProcessEnv): Options {
  let values;
  try {
    ({ values } = parseArgs({
      args: argv,
      options: {
        buyers: { type: 'string' },
        units: { type: 'string' },
        concurrency: { type: 'string' },
        'respond-async': { type: 'boolean' },
        room: { type: 'boolean' },
        'stripe-rate': { type: 'string' },
        'stripe-budget': { type: 'string' },
        base: { type: 'string' },
        'admin-token': { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
      strict: true,
      allowPositionals: false,
    }));
  } catch (err) {
    throw new UsageError(`${(err as Error).message}\n${HELP}`);
  }
  if (values.help) {
    console.log(HELP);
    process.exit(0);
  }
  const opts: Options = {
    buyers: positiveInt('--buyers', values.buyers ?? env.BENCH_BUYERS, 10_000),
    units: positiveInt('--units', values.units ?? env.BENCH_UNITS, 600),
    concurrency: positiveInt('--concurrency', values.concurrency ?? env.BENCH_CONCURRENCY, 256),
    respondAsync: values['respond-async'] ?? env.BENCH_RESPOND_ASYNC === '1',
    room: values.room ?? env.BENCH_ROOM === '1',
    ...rates(values['stripe-rate'] ?? env.BENCH_STRIPE_RATE, values['stripe-budget'] ?? env.BENCH_STRIPE_BUDGET),
    base: (values.base ?? env.BENCH_BASE_URL)?.replace(/\/+$/, '') || undefined,
    adminToken: values['admin-token'] ?? env.BENCH_ADMIN_TOKEN,
  };
  if (opts.base) {
    if (!/^https?:\/\/[^/]+$/.test(opts.base)) throw new UsageError(`--base must look like http://host:port`);
    opts.adminToken ||= env.ADMIN_TOKEN;
    if (!opts.adminToken) throw new UsageError('--base needs --admin-token (or BENCH_ADMIN_TOKEN / ADMIN_TOKEN)');
  }
  return opts;
}
