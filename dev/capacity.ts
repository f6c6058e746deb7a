// `npm run capacity -- --units 10000 --buyers 100000 --hold 600 ...`: the sizing of docs/capacity.md
// for a drop, from the measured constants (dev/capacity-model.ts). The doc's worked example is this
// command's output, and the fast tier checks that it still is.
import { parseArgs } from 'node:util';
import { MEASURED, size, type Drop, type Sizing } from './capacity-model';

const HELP = `usage: npm run capacity -- --units N --buyers M [--hold S] [--arrival S] [--session-budget R]
       [--request-budget R] [--room-rate R] [--temporal-cloud APS] [--page-share F] [--leave]
       [--apis N] [--workers N]

  --units N            units on sale
  --buyers M           buyers who join the waiting room
  --hold S             the product's holdSeconds (default 600)
  --arrival S          every buyer joins within S seconds of the opening (default 60)
  --session-budget R   STRIPE_MAX_SESSIONS_PER_SECOND (default 20)
  --request-budget R   STRIPE_MAX_REQUESTS_PER_SECOND (default 80, a live key's)
  --room-rate R        the room's admitPerSecond (default: none, the budget's pace)
  --temporal-cloud A   Temporal Cloud's actions a second for the namespace (default: self-hosted)
  --page-share F       share of waiting buyers on the queue page, a poll and a render a refresh (default 1)
  --leave              refused buyers leave when told sold out for now (default: they wait for the end)
  --apis N, --workers N  processes, for connections and memory (default 2 each)`;

export class UsageError extends Error {}

export function readDrop(argv: string[]): Drop {
  let v;
  try {
    ({ values: v } = parseArgs({
      args: argv,
      strict: true,
      options: {
        units: { type: 'string' },
        buyers: { type: 'string' },
        hold: { type: 'string' },
        arrival: { type: 'string' },
        'session-budget': { type: 'string' },
        'request-budget': { type: 'string' },
        'room-rate': { type: 'string' },
        'temporal-cloud': { type: 'string' },
        'page-share': { type: 'string' },
        leave: { type: 'boolean' },
        apis: { type: 'string' },
        workers: { type: 'string' },
      },
    }));
  } catch (err) {
    throw new UsageError(`${(err as Error).message}\n${HELP}`);
  }
  const num = (name: string, raw: string | undefined, dflt?: number, max = Infinity): number => {
    if (raw === undefined) {
      if (dflt === undefined) throw new UsageError(`--${name} is required\n${HELP}`);
      return dflt;
    }
    const n = Number(raw);
    if (!Number.isFinite(n) || n <= 0 || n > max)
      throw new UsageError(`--${name} must be a number above 0, got "${raw}"`);
    return n;
  };
  return {
    units: num('units', v.units),
    buyers: num('buyers', v.buyers),
    holdSeconds: num('hold', v.hold, 600),
    arrivalSeconds: num('arrival', v.arrival, 60),
    sessionBudget: num('session-budget', v['session-budget'], 20),
    requestBudget: num('request-budget', v['request-budget'], 80),
    ...(v['room-rate'] ? { roomRate: num('room-rate', v['room-rate']) } : {}),
    ...(v['temporal-cloud'] ? { temporalActionsPerSecond: num('temporal-cloud', v['temporal-cloud']) } : {}),
    pageShare: v['page-share'] === undefined ? 1 : num('page-share', v['page-share'], 1, 1),
    stay: !v.leave,
    apis: num('apis', v.apis, 2),
    workers: num('workers', v.workers, 2),
  };
}

const int = (n: number) => Math.round(n).toLocaleString('en-US');
const one = (n: number) => n.toFixed(1);
const minutes = (s: number) => `${one(s / 60)} min`;

/** The sizing as the doc shows it: one `what | how much | from` row a line. */
export function sizingTable(d: Drop, z: Sizing): string {
  const m = MEASURED;
  const cpu = z.sale.cpuSeconds;
  const perMinute = (m.pollApiMs + d.pageShare * m.pageApiMs + (1 + d.pageShare) * m.balancerRequestMs).toFixed(2);
  const rows: Array<[string, string]> = [
    ['pace', `${one(z.pace)} sagas/s, bound by ${z.boundBy}`],
    ['sagas / refused buyers', `${int(z.sagas)} / ${int(z.refused)}`],
    ['every unit spoken for', `${minutes(z.spokenForAt)} after the opening (sold out for now)`],
    ['last unit sold', `${minutes(z.soldOutAt)} (unpaid holds come back in waves, one hold apart)`],
    ['peak arrival', `${int(z.peak.joinsPerSecond)} joins/s, then ${int(z.peak.pollsPerSecond)} polls/s`],
    ['API cores at the peak', `${one(z.peak.apiCores)} (joins, polls and renders)`],
    ['all cores at the peak', `${one(z.peak.cores)} (the crowd, the sale at its pace, the open room; no headroom)`],
    [
      'the waiting crowd',
      `${int(z.crowd.buyerMinutes)} buyer-minutes, ${int(z.crowd.polls)} polls, ${int(z.crowd.renders)} renders: ${one(z.crowd.pollsPerBuyerMinute)} polls a buyer-minute`,
    ],
    ['  its CPU', `${int(z.crowd.cpuSeconds)} CPU-s (API and balancer; ${perMinute} ms a minute waited far back)`],
    [
      'the sale CPU',
      `${int(Object.values(cpu).reduce((a, b) => a + b, 0))} CPU-s: ${Object.entries(cpu)
        .map(([k, s]) => `${k} ${int(s)}`)
        .join(', ')}`,
    ],
    ['  its cores at the pace', one(z.sale.cores)],
    ['Temporal actions', `${int(z.sale.actions)}, ${int(z.sale.actionsPerSecond)}/s at the pace`],
    ['Stripe calls', int(z.sale.stripeCalls)],
    [
      'Postgres connections',
      `${int(z.postgres.connections)} (${d.apis} APIs, ${d.workers} workers, one Temporal server)`,
    ],
    ['WAL', `${int(z.postgres.walMb)} MB (the app's and Temporal's databases on one server)`],
    ['app database growth', `${int(z.postgres.appMb)} MB`],
    [
      'Temporal persistence',
      `${int(z.postgres.temporalMb)} MB, ${int(z.postgres.temporalRows)} rows until retention ends`,
    ],
    ['resident memory', `${one(z.memoryGb)} GB (${d.apis} APIs, ${d.workers} workers, Temporal, Postgres)`],
    ['logs at info', `${int(z.logMb)} MB`],
  ];
  const width = Math.max(...rows.map(([k]) => k.length));
  return rows.map(([k, v]) => `${k.padEnd(width)}  ${v}`).join('\n');
}

if (require.main === module) {
  try {
    const drop = readDrop(process.argv.slice(2));
    console.log(sizingTable(drop, size(drop)));
  } catch (err) {
    if (!(err instanceof UsageError)) throw err;
    console.error(err.message);
    process.exit(2);
  }
}
