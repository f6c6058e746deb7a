import type { Client } from '@temporalio/client';
import { startLocalSystem } from '../dev/local-system';
import { sleep } from '../dev/proc';
import type { HttpClient } from './http-client';
import { aborter, isTearingDown, onTeardown } from './teardown';

// What bench:crowd drives: the stack it starts (the API, worker and emulator as child processes), or
// an API already running (--base), and the waits it needs of them.

const READY_TIMEOUT_MS = 90_000;
const VERBOSE = process.env.BENCH_VERBOSE === '1';

export interface Target {
  base: string;
  adminToken: string;
  /** The HS256 secret the API verifies buyer tokens with. */
  buyerSecret: string;
  databaseUrl?: string;
  temporalAddress?: string;
  temporalNamespace: string;
  describe: string;
  /** The payments emulator of the stack this run started (its rate limits are read from it). */
  emulatorUrl?: string;
  /** The API's process, when this run started it (its CPU is read from /proc). */
  apiPid?: number;
}

export async function startLocal(opts: { stripeRate?: number; stripeBudget?: number }): Promise<Target> {
  const log = VERBOSE ? (line: string): void => console.error(line) : undefined;
  const starting = startLocalSystem({
    name: 'bench-crowd',
    ...(opts.stripeRate !== undefined ? { emulatorEnv: { STRIPE_EMULATOR_RATE_LIMIT: String(opts.stripeRate) } } : {}),
    ...(opts.stripeBudget !== undefined ? { env: { STRIPE_MAX_REQUESTS_PER_SECOND: String(opts.stripeBudget) } } : {}),
    log,
    say: (line) => console.error(line),
    signal: aborter.signal,
    // One machine plays the whole crowd from one address: the per-IP and per-buyer limits would be the bottleneck measured.
    apiEnv: {
      RATE_LIMIT_PER_IP_PER_SECOND: '0',
      RATE_LIMIT_PAGES_PER_IP_PER_SECOND: '0',
      RATE_LIMIT_PER_BUYER_PER_MINUTE: '0',
    },
    // A child dying mid-run (not at teardown) spoils the figures: say so and stop.
    onUnexpectedExit: (name, info, output) => {
      if (isTearingDown()) return;
      console.error(`${name} exited (${info.code ?? info.signal}) during the run:\n${output}`);
      aborter.abort(new Error(`${name} exited`));
    },
  });
  // Ctrl-C while it starts: startLocalSystem stops what it started and rejects; wait for that.
  onTeardown('the local system', () =>
    starting.then(
      (system) => system.stop(),
      () => {},
    ),
  );
  const system = await starting;
  return {
    base: system.base,
    adminToken: system.adminToken,
    buyerSecret: system.buyerSecret,
    databaseUrl: system.databaseUrl,
    temporalAddress: system.temporalAddress,
    temporalNamespace: system.temporalNamespace,
    emulatorUrl: system.emulatorUrl,
    apiPid: system.apiPid,
    describe: `own stack: API (pid ${system.apiPid}), worker and emulator in child processes`,
  };
}

export async function waitReady(client: HttpClient): Promise<void> {
  const deadline = Date.now() + READY_TIMEOUT_MS;
  let last = '';
  while (Date.now() < deadline && !aborter.signal.aborted) {
    try {
      const r = await client.send('GET', '/readyz');
      if (r.status === 200) return;
      last = `${r.status} ${r.body}`;
    } catch (err) {
      last = (err as Error).message;
    }
    await sleep(200);
  }
  throw new Error(`GET /readyz did not answer 200 within ${READY_TIMEOUT_MS / 1000}s (last: ${last})`);
}

/** Visibility is eventually consistent: poll until the count has not moved for a second. */
export async function stableCount(temporal: Client, query: string, timeoutMs = 60_000): Promise<number> {
  const deadline = Date.now() + timeoutMs;
  let last = -1;
  let since = Date.now();
  for (;;) {
    const { count } = await temporal.workflow.count(query);
    if (count !== last) {
      last = count;
      since = Date.now();
    } else if (Date.now() - since >= 1000) {
      return count;
    }
    if (Date.now() > deadline) return count;
    await sleep(200);
  }
}
