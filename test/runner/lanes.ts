import fs from 'node:fs';
import path from 'node:path';

// The stack tier's lanes, on the same stack: the light lane and the waiting lane side by side, then
// the heavy lane.
//
// Most stack files spend half their time waiting: on a hold to lapse, a timer, a webhook's retry, a
// server restarted. Two at a time left the machine about 46 % idle through test/saga and test/worker.
// The files below keep both cores busy by themselves (a cluster of processes, Chromium, a crowd of
// hundreds, a whole `npm start`), and tests bound by time beside them failed when four files ran at
// once: they run three at a time (two until the tier ran compiled and each process took less CPU to
// start), and every other file four at a time, with no heavy file beside them. A new file that starts
// many processes or a browser belongs here.
//
// A few files do little but wait, for most of a minute (WAITING_FILES): in their lane each held one
// of its places for 33 to 77 s while using a tenth to a quarter of a core. They run two at a time in
// an ava of their own beside the light lane, which keeps its four places for files that work, and
// the heavy lane its three.

/** Files (or folders, ending in `/`) that take both cores, each with why. */
export const HEAVY_FILES: readonly string[] = [
  'test/drill/cluster.test.ts', // two APIs, two workers, HAProxy and the real Temporal server
  'test/drill/drill.test.ts', // four drills, each on a stack of its own
  'test/e2e/', // Chromium, with an API and a worker each
  'test/dev/restart.test.ts', // `npm start` again and again
  'test/dev/start.test.ts', // `npm start` from a bare machine
  'test/saga/chaos.test.ts', // 300 buyers through worker kills and server restarts
  'test/saga/crowd.test.ts', // 50 sagas at once, a worker killed among them
  'test/room/crowd.test.ts', // 2,000 buyers in a room
  'test/api/outages.test.ts', // every answer within 2 s while Postgres and Temporal stop under load
];

/**
 * Files that mostly wait, each with its wall and CPU time in the lane it ran in before (a /proc
 * sampler, 2026-12-05): they run in the waiting lane, beside the light lane.
 */
export const WAITING_FILES: readonly string[] = [
  'test/saga/stripe-budget.test.ts', // sessions paced by the Stripe budget: 77 s, 21 CPU-s
  'test/worker/health.test.ts', // a long poll that must fail at the transport: 55 s, 6 CPU-s
  'test/saga/money-safety.test.ts', // refunds retried with backoff: 62 s, 7 CPU-s
  'test/saga/webhooks-and-faults.test.ts', // webhooks stopped until a hold lapses: 38 s, 6 CPU-s
  'test/saga/hold-grace.test.ts', // payments reported after the lapse: 33 s, 5 CPU-s
  // Chromium pages of a checkout waiting for its turn at one checkout every 18 s, in the heavy lane
  // for their browser: 59 s, 8 CPU-s and 39 s, 8 CPU-s.
  'test/e2e/checkout-line-pages.test.ts',
  'test/e2e/no-script-checkout-line.test.ts',
];

/**
 * The longest files of each lane, started first so that shorter files fill the places around them
 * (started last, the two long waits kept their lane going 30 to 50 s alone; the drills, the heavy lane).
 */
export const START_FIRST: readonly string[] = [
  'test/saga/stripe-budget.test.ts', // the waiting lane: sessions paced by the Stripe budget, 60 to 70 s
  'test/worker/health.test.ts', // the waiting lane: a long poll that must fail at the transport, about 50 s
  'test/drill/drill.test.ts', // about 110 s
  'test/drill/cluster.test.ts', // about 90 s
];

/** How many files run at once in each lane. */
export const LANE_CONCURRENCY = { heavy: 3, light: 4, waiting: 2 } as const;

/** Every stack-tier test file (what test/runner/stack.config.mjs's `files` name, compiled), relative to `root`, in name order. */
export function stackTestFiles(root: string): string[] {
  const under = (dir: string): string[] =>
    fs.existsSync(path.join(root, dir))
      ? fs
          .readdirSync(path.join(root, dir), { recursive: true, encoding: 'utf8' })
          .filter((f) => f.endsWith('.test.ts'))
          .map((f) => path.posix.join(dir, f.split(path.sep).join('/')))
      : [];
  const packages = fs.existsSync(path.join(root, 'packages')) ? fs.readdirSync(path.join(root, 'packages')) : [];
  return [
    ...under('test').filter((f) => !f.startsWith('test/fast/')),
    ...packages.flatMap((p) => under(`packages/${p}/test`)),
  ].sort((a, b) => a.localeCompare(b, [], { numeric: true }));
}

/** The heavy, light and waiting lanes of these files, each in the order ava is to start them. */
export function splitLanes(files: string[]): { heavy: string[]; light: string[]; waiting: string[] } {
  const heavy = (f: string) => HEAVY_FILES.some((h) => (h.endsWith('/') ? f.startsWith(h) : f === h));
  const waiting = (f: string) => WAITING_FILES.includes(f);
  // ava starts the files it is given in that order.
  const ordered = [...START_FIRST.filter((f) => files.includes(f)), ...files.filter((f) => !START_FIRST.includes(f))];
  return {
    heavy: ordered.filter((f) => heavy(f) && !waiting(f)),
    light: ordered.filter((f) => !heavy(f) && !waiting(f)),
    waiting: ordered.filter(waiting),
  };
}
