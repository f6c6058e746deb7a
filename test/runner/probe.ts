import fs from 'node:fs';
import pg from 'pg';
import { Connection } from '@temporalio/client';

// While the stack tier runs, the launcher (idle beside ava) looks at the shared servers and the
// machine once a second: a commit on the tests' Postgres, a task-queue lookup on their Temporal
// server, how far its own timers ran late, and the kernel's pressure stall figures (the share of
// the second in which tasks waited for a CPU, the disk or memory). When a lane fails, the seconds in
// which something stood still are printed under its failures: a test that timed out then shows
// whether its own code waited, or the whole stack did (and on what).

/** One look: when it began (ms since epoch), and what it found. */
export interface Look {
  at: number;
  /** The probe's round trip, ms (a commit, a task-queue lookup); the timer's delay for `timers`. */
  ms: number;
  /** Set when the probe failed. */
  error?: string;
}

/** The share of one second (0 to 1) in which some task stalled waiting, per resource. */
export interface Pressure {
  at: number;
  cpu: number;
  io: number;
  memory: number;
}

export interface ProbeRecord {
  postgres: Look[];
  temporal: Look[];
  timers: Look[];
  pressure: Pressure[];
}

/** A look slower than this is a stall worth naming. */
const SLOW_MS = 1_000;
/** A second in which tasks waited this share of it for the disk or memory is named too. */
const PRESSED = 0.5;
const PERIOD_MS = 1_000;
const PROBE_TIMEOUT_MS = 120_000;
/** How long stopping waits for looks under way. */
const STOP_WAIT_MS = 2_000;

/** Starts looking; `stop()` ends it and returns what it saw. Never throws: a probe that fails is recorded. */
export function startProbe(stack: { databaseUrl: string; temporalAddress: string; temporalNamespace: string }): {
  stop(): Promise<ProbeRecord>;
} {
  const record: ProbeRecord = { postgres: [], temporal: [], timers: [], pressure: [] };
  let running = true;
  const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
  const loop = async (into: Look[], look: () => Promise<unknown>) => {
    while (running) {
      const at = Date.now();
      try {
        await look();
        into.push({ at, ms: Date.now() - at });
      } catch (err) {
        into.push({ at, ms: Date.now() - at, error: (err as Error).message.slice(0, 120) });
      }
      await sleep(Math.max(PERIOD_MS - (Date.now() - at), 0));
    }
  };
  const db = new pg.Pool({
    connectionString: stack.databaseUrl,
    max: 1,
    // A commit's flush is not under statement_timeout: the client gives up on its own too.
    statement_timeout: PROBE_TIMEOUT_MS,
    query_timeout: PROBE_TIMEOUT_MS,
    connectionTimeoutMillis: PROBE_TIMEOUT_MS,
  });
  db.on('error', () => {}); // a restart the tests make; the next look records the failure
  // txid_current() takes a transaction id, so its commit is flushed to the WAL like a sale's.
  const postgres = loop(record.postgres, () => db.query('SELECT txid_current()'));
  const connection = Connection.lazy({ address: stack.temporalAddress });
  const temporal = loop(record.temporal, () =>
    connection.withDeadline(Date.now() + PROBE_TIMEOUT_MS, () =>
      connection.workflowService.describeTaskQueue({
        namespace: stack.temporalNamespace,
        taskQueue: { name: 'stack-probe' },
        taskQueueType: 1,
      }),
    ),
  );
  let last = readPressure();
  let tick = Date.now();
  const timer = setInterval(() => {
    const now = Date.now();
    const elapsed = now - tick;
    record.timers.push({ at: tick, ms: Math.max(elapsed - PERIOD_MS, 0) });
    tick = now;
    const next = readPressure();
    if (last && next) {
      const before = last;
      const share = (k: Resource) => Math.min((next[k] - before[k]) / 1_000 / Math.max(elapsed, 1), 1);
      record.pressure.push({ at: now, cpu: share('cpu'), io: share('io'), memory: share('memory') });
    }
    last = next;
  }, PERIOD_MS);
  return {
    async stop() {
      running = false;
      clearInterval(timer);
      // A look still waiting on a stalled server is not waited for: the record is what was seen.
      await Promise.race([Promise.allSettled([postgres, temporal]), sleep(STOP_WAIT_MS)]);
      void Promise.allSettled([db.end(), connection.close()]);
      return record;
    },
  };
}

type Totals = Record<Resource, number>;

/** The kernel's cumulative "some" stall time per resource, µs (none where the kernel has no PSI). */
function readPressure(): Totals | undefined {
  try {
    const total = (resource: string) =>
      Number(/^some .*total=(\d+)/m.exec(fs.readFileSync(`/proc/pressure/${resource}`, 'utf8'))?.[1] ?? NaN);
    const totals = { cpu: total('cpu'), io: total('io'), memory: total('memory') };
    return Object.values(totals).every(Number.isFinite) ? totals : undefined;
  } catch {
    return undefined;
  }
}

const clock = (ms: number) => new Date(ms).toISOString().slice(11, 19);
const pct = (share: number) => `${Math.round(share * 100)} %`;

/**
 * What the record shows, as lines to print: the slowest look of each kind, then every stall in time
 * order, at most `max`: a look slower than a second or failed, with the most of a second its tasks
 * waited for a CPU or the disk meanwhile, and a second in which tasks waited half of it for the disk
 * or memory (waiting for a CPU is common while the tier runs: it is named only beside a stall).
 */
export function describeProbe(record: ProbeRecord, max = 30): string[] {
  const slowest = (looks: Look[], what: string) => {
    const worst = looks.reduce<Look | undefined>((w, l) => (!w || l.ms > w.ms ? l : w), undefined);
    return worst ? `${what} ${worst.ms} ms at ${clock(worst.at)}` : `${what} never`;
  };
  const peak = (k: Resource, from = 0, to = Infinity) => {
    const within = record.pressure.filter((p) => p.at >= from && p.at <= to + PERIOD_MS);
    return within.length ? Math.max(...within.map((p) => p[k])) : undefined;
  };
  const peakText = (k: Resource) => {
    const share = peak(k);
    return share === undefined ? 'unknown' : pct(share);
  };
  const lines = [
    `slowest: ${slowest(record.postgres, 'Postgres commit')}, ${slowest(record.temporal, 'Temporal task-queue lookup')}, ` +
      `launcher's timer late ${slowest(record.timers, 'by')}; most of a second waiting for a CPU ${peakText('cpu')}, ` +
      `the disk ${peakText('io')}, memory ${peakText('memory')}` +
      failedText([
        ['Postgres', record.postgres],
        ['Temporal', record.temporal],
      ]),
  ];
  const events: Array<{ at: number; text: string }> = [];
  const looks = (list: Look[], what: (l: Look) => string) => {
    for (const l of list) {
      if (!l.error && l.ms < SLOW_MS) continue;
      const cpu = peak('cpu', l.at, l.at + l.ms);
      const io = peak('io', l.at, l.at + l.ms);
      const waited =
        cpu === undefined || io === undefined ? '' : ` (waiting for a CPU up to ${pct(cpu)}, the disk ${pct(io)})`;
      events.push({ at: l.at, text: `${what(l)}${l.error ? `, failed: ${l.error}` : ''}${waited}` });
    }
  };
  looks(record.postgres, (l) => `Postgres commit took ${l.ms} ms`);
  looks(record.temporal, (l) => `Temporal task-queue lookup took ${l.ms} ms`);
  looks(record.timers, (l) => `launcher's timer ran ${l.ms} ms late`);
  for (const p of record.pressure) {
    const pressed = (['io', 'memory'] as const).filter((k) => p[k] >= PRESSED);
    if (pressed.length)
      events.push({
        at: p.at,
        text: `waiting for ${pressed.map((k) => `${k === 'io' ? 'the disk' : k} ${pct(p[k])} of the second`).join(', ')}`,
      });
  }
  events.sort((a, b) => a.at - b.at);
  if (!events.length) return [...lines, 'no stall: every look under a second'];
  return [
    ...lines,
    ...events.slice(0, max).map((e) => `${clock(e.at)} ${e.text}`),
    ...(events.length > max ? [`… and ${events.length - max} more`] : []),
  ];
}

type Resource = keyof Omit<Pressure, 'at'>;

/** `; failed looks: Postgres 2, Temporal 1` when any look failed (a run that passed names none of them), else nothing. */
function failedText(kinds: Array<[string, Look[]]>): string {
  const failed = kinds
    .map(([what, looks]) => [what, looks.filter((l) => l.error).length] as const)
    .filter(([, n]) => n > 0);
  return failed.length ? `; failed looks: ${failed.map(([what, n]) => `${what} ${n}`).join(', ')}` : '';
}

/**
 * The last `max` warnings and errors of a server's log (the Temporal dev server logs at warn level: a
 * "Slow gRPC call" names the call and how long it took), for a failed run's report; none when the
 * log cannot be read.
 */
export function lastWarnings(logFile: string, max = 20): string[] {
  let text: string;
  try {
    text = fs.readFileSync(logFile, 'utf8');
  } catch {
    return [];
  }
  return text
    .split('\n')
    .filter((line) => /\blevel=(WARN|ERROR)\b/.test(line))
    .slice(-max)
    .map((line) => line.slice(0, 300));
}
