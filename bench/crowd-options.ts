import { parseArgs } from 'node:util';

// The flags (or environment) of `npm run bench:crowd`: see bench/crowd.ts.

const HELP = `usage: npm run bench:crowd -- [--buyers N] [--units M] [--concurrency C] [--respond-async] [--room] [--base URL --admin-token T]`;

export interface Options {
  buyers: number;
  units: number;
  concurrency: number;
  respondAsync: boolean;
  room: boolean;
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
