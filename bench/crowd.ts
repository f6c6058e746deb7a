import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { Client, Connection } from '@temporalio/client';
import pg from 'pg';
import { signBuyerToken } from '../config/buyer-tokens';
import { reconcile } from '../store/reconcile';
import { freePort, sleep, spawnChild, type ChildHandle } from '../dev/proc';
import { startStack } from '../dev/stack';

/**
 * `npm run bench:crowd`: a flash-sale crowd over HTTP. N buyers (default 10,000) for M units (default
 * 600), C requests in flight (default 256), each buyer one POST /v1/purchases with its own
 * Idempotency-Key; beside GET /healthz of the same API at the same concurrency and the same count in
 * the same run. Prints answers/s and the ratio to the bare route, p50/p99 of the winners' 201s and of
 * the sold-out answers, the sagas started (Temporal visibility), and checks the stock is exact.
 *
 * Flags (or env): --buyers (BENCH_BUYERS), --units (BENCH_UNITS), --concurrency (BENCH_CONCURRENCY),
 * --base URL (BENCH_BASE_URL) to run against an API that is already up, with --admin-token
 * (BENCH_ADMIN_TOKEN, else ADMIN_TOKEN); DATABASE_URL and TEMPORAL_ADDRESS then name its Postgres and
 * Temporal for the checks that need them (skipped without them). Without --base it starts a throwaway
 * stack in a temp dir (Postgres and a Temporal dev server, or those named by DATABASE_URL and
 * TEMPORAL_ADDRESS, as bench:saga does) and the payments emulator, the worker and the API as child
 * processes, so the API is measured alone on its event loop as in production. BENCH_VERBOSE=1 echoes
 * their output. Ctrl-C stops everything. Exits 1 when the stock is not exact (answers other than 201
 * and sold-out, or units held by buyers who got no 201, are reported but do not fail the run).
 */

const HELP = `usage: npm run bench:crowd -- [--buyers N] [--units M] [--concurrency C] [--base URL --admin-token T]`;
const ADMIN = 'bench-admin';
const BUYER_SECRET = 'bench-buyer-token-secret-0123456789abcdef';
const WEBHOOK_SECRET = 'whsec_bench_crowd';
/** Longer than the API's own deadline (PURCHASE_TIMEOUT_MS, 20 s): the API should answer first. */
const REQUEST_TIMEOUT_MS = 120_000;
const READY_TIMEOUT_MS = 90_000;
const WARMUP_BUYERS = 20;
const WARMUP_UNITS = 5;
const VERBOSE = process.env.BENCH_VERBOSE === '1';

// ---------------------------------------------------------------------------------------------
// Options

interface Options {
  buyers: number;
  units: number;
  concurrency: number;
  base?: string;
  adminToken?: string;
}

function positiveInt(name: string, raw: string | undefined, dflt: number): number {
  if (raw === undefined || raw === '') return dflt;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1) throw new UsageError(`${name} must be a positive integer, got "${raw}"`);
  return n;
}

class UsageError extends Error {}

function readOptions(argv: string[], env: NodeJS.ProcessEnv): Options {
  let values;
  try {
    ({ values } = parseArgs({
      args: argv,
      options: {
        buyers: { type: 'string' },
        units: { type: 'string' },
        concurrency: { type: 'string' },
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

// ---------------------------------------------------------------------------------------------
// Teardown: everything started registers how to stop it; Ctrl-C and the end of the run both unwind
// the list once, newest first (client sockets, API, worker, emulator, then Temporal and Postgres).

const closers: Array<{ name: string; close: () => Promise<void> }> = [];
let tearingDown: Promise<void> | undefined;
const aborter = new AbortController();

function onTeardown(name: string, close: () => Promise<void>): void {
  // Started while already stopping (Ctrl-C during start-up): stop it at once.
  if (tearingDown) void close().catch(() => {});
  else closers.push({ name, close });
}

function teardown(): Promise<void> {
  tearingDown ??= (async () => {
    while (closers.length) {
      const { name, close } = closers.pop()!;
      try {
        await close();
        if (aborter.signal.aborted) console.error(`  stopped: ${name}`);
      } catch (err) {
        console.error(`teardown: ${name}: ${(err as Error).message}`);
      }
    }
  })();
  return tearingDown;
}

let firstSignalAt = 0;
function onSignal(signal: NodeJS.Signals): void {
  if (firstSignalAt) {
    // `npx tsx` relays the terminal's Ctrl-C, so one key press arrives twice: only a later one forces.
    if (Date.now() - firstSignalAt < 1500) return;
    // A second Ctrl-C: leave now; the children's death signals still stop them.
    console.error(`${signal} again: exiting without waiting`);
    process.exit(130);
  }
  firstSignalAt = Date.now();
  console.error(`\n${signal}: stopping the crowd and everything this run started (Ctrl-C again to force)`);
  aborter.abort(new Error(signal));
  void teardown().finally(() => process.exit(130));
}

// ---------------------------------------------------------------------------------------------
// HTTP: one keep-alive agent sized to the concurrency (undici is not installed: node:http).

interface Reply {
  status: number;
  body: string;
}

class HttpClient {
  private readonly agent: http.Agent;
  private readonly transport: typeof http | typeof https;
  private readonly url: URL;

  constructor(base: string, sockets: number) {
    this.url = new URL(base);
    this.transport = this.url.protocol === 'https:' ? https : http;
    const agentOpts = { keepAlive: true, maxSockets: sockets, maxFreeSockets: sockets };
    this.agent = this.url.protocol === 'https:' ? new https.Agent(agentOpts) : new http.Agent(agentOpts);
  }

  send(method: string, pathname: string, headers: Record<string, string> = {}, body?: string): Promise<Reply> {
    return new Promise((resolve, reject) => {
      const req = this.transport.request(
        {
          host: this.url.hostname,
          port: this.url.port || (this.url.protocol === 'https:' ? 443 : 80),
          method,
          path: pathname,
          agent: this.agent,
          headers: body === undefined ? headers : { ...headers, 'content-length': String(Buffer.byteLength(body)) },
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }));
          res.on('error', reject);
        },
      );
      req.setTimeout(REQUEST_TIMEOUT_MS, () => req.destroy(new Error(`no answer within ${REQUEST_TIMEOUT_MS} ms`)));
      req.on('error', reject);
      req.end(body);
    });
  }

  async json(method: string, pathname: string, headers: Record<string, string> = {}, body?: unknown) {
    const r = await this.send(
      method,
      pathname,
      body === undefined ? headers : { ...headers, 'content-type': 'application/json' },
      body === undefined ? undefined : JSON.stringify(body),
    );
    return { status: r.status, body: parseJson(r.body) };
  }

  close(): void {
    this.agent.destroy();
  }
}

function parseJson(text: string): Record<string, unknown> {
  try {
    const v: unknown = JSON.parse(text);
    return v && typeof v === 'object' ? (v as Record<string, unknown>) : {};
  } catch {
    return {};
  }
}

/** One buyer's request, built in one place: buyer `buyer-<n>`, with that buyer's token. */
function purchaseRequest(sku: string, token: string): { headers: Record<string, string>; body: string } {
  return {
    headers: { 'content-type': 'application/json', 'idempotency-key': randomUUID(), authorization: `Bearer ${token}` },
    body: JSON.stringify({ sku }),
  };
}

/** Buyer tokens for `buyer-0` … `buyer-<count-1>`, signed before the clock starts (the merchant's login issues them). */
async function buyerTokens(secret: string, prefix: string, count: number): Promise<string[]> {
  return Promise.all(Array.from({ length: count }, (_, n) => signBuyerToken(secret, `${prefix}-${n}`)));
}

// ---------------------------------------------------------------------------------------------
// Driving N requests with C in flight, classifying each answer.

interface Answer {
  cls: string;
  ms: number;
  purchaseId?: string;
  final?: unknown;
}

interface Phase {
  name: string;
  answers: Answer[];
  seconds: number;
}

async function drive(
  name: string,
  count: number,
  concurrency: number,
  once: (n: number) => Promise<Omit<Answer, 'ms'>>,
  progress?: (done: Answer[]) => string,
): Promise<Phase> {
  const answers: Answer[] = [];
  let next = 0;
  const started = process.hrtime.bigint();
  const ticker =
    progress &&
    setInterval(() => {
      const s = Number(process.hrtime.bigint() - started) / 1e9;
      console.error(`  ${name}: ${answers.length}/${count} answered in ${s.toFixed(0)}s, ${progress(answers)}`);
    }, 10_000);
  try {
    await Promise.all(
      Array.from({ length: Math.min(concurrency, count) }, async () => {
        while (next < count && !aborter.signal.aborted) {
          const n = next++;
          const t0 = process.hrtime.bigint();
          let a: Omit<Answer, 'ms'>;
          try {
            a = await once(n);
          } catch (err) {
            const e = err as NodeJS.ErrnoException;
            a = { cls: `network error ${e.code ?? e.message}` };
          }
          answers.push({ ...a, ms: Number(process.hrtime.bigint() - t0) / 1e6 });
        }
      }),
    );
  } finally {
    if (ticker) clearInterval(ticker);
  }
  if (aborter.signal.aborted) throw new Error('interrupted');
  return { name, answers, seconds: Number(process.hrtime.bigint() - started) / 1e9 };
}

function classifyPurchase(r: { status: number; body: Record<string, unknown> }): Omit<Answer, 'ms'> {
  const type = typeof r.body.type === 'string' ? r.body.type : undefined;
  if (r.status === 201 && typeof r.body.checkoutUrl === 'string') {
    return { cls: 'winner', purchaseId: String(r.body.purchaseId) };
  }
  if (r.status === 409 && type === 'sold-out') return { cls: 'sold-out', final: r.body.final };
  return { cls: `${r.status} ${type ?? (r.status === 201 ? 'without checkoutUrl' : '(no problem type)')}` };
}

function percentile(sorted: number[], p: number): number {
  if (!sorted.length) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

function latencies(answers: Answer[]): { n: number; p50: number; p99: number } {
  const ms = answers.map((a) => a.ms).sort((a, b) => a - b);
  return { n: ms.length, p50: percentile(ms, 50), p99: percentile(ms, 99) };
}

const fmt = (x: number, digits = 0): string => (Number.isFinite(x) ? x.toFixed(digits) : '-');

function countBy<T>(xs: T[], key: (x: T) => string): Map<string, number> {
  const m = new Map<string, number>();
  for (const x of xs) m.set(key(x), (m.get(key(x)) ?? 0) + 1);
  return m;
}

// ---------------------------------------------------------------------------------------------
// The local stack: Postgres + Temporal (dev/stack.ts), then emulator, worker and API as children.

interface Target {
  base: string;
  adminToken: string;
  /** The HS256 secret the API verifies buyer tokens with. */
  buyerSecret: string;
  databaseUrl?: string;
  temporalAddress?: string;
  temporalNamespace: string;
  describe: string;
}

function startNode(
  name: string,
  script: string,
  env: NodeJS.ProcessEnv,
  readyLine: RegExp,
): { child: ChildHandle; ready: Promise<void> } {
  const root = path.resolve(__dirname, '..');
  let markReady = (): void => {};
  const seen = new Promise<void>((resolve) => (markReady = resolve));
  const child = spawnChild({
    name,
    command: process.execPath,
    args: ['--import', 'tsx', path.join(root, script)],
    env: { ...process.env, ...env },
    cwd: root,
    onLine: (line) => {
      if (VERBOSE) console.error(`[${name}] ${line}`);
      if (readyLine.test(line)) markReady();
    },
    deathSignal: 'SIGTERM',
    stopSteps: [
      ['SIGTERM', 15_000],
      ['SIGKILL', 2000],
    ],
  });
  onTeardown(name, () => child.stop());
  let up = false;
  void child.exited.then((info) => {
    // A child dying mid-run (not at teardown) spoils the figures: say so and stop.
    if (up && !tearingDown) {
      console.error(`${name} exited (${info.code ?? info.signal}) during the run:\n${child.output()}`);
      aborter.abort(new Error(`${name} exited`));
    }
  });
  let timer: NodeJS.Timeout | undefined;
  const failed = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new Error(`${name} was not ready after ${READY_TIMEOUT_MS / 1000}s:\n${child.output()}`)),
      READY_TIMEOUT_MS,
    );
    void child.exited.then((info) =>
      reject(
        new Error(
          `${name} exited (${info.error?.message ?? info.code ?? info.signal}) before it was ready:\n${child.output()}`,
        ),
      ),
    );
  });
  const ready = Promise.race([seen, failed]).finally(() => clearTimeout(timer));
  void ready.then(() => (up = true)).catch(() => {});
  return { child, ready };
}

async function startLocal(): Promise<Target> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'bench-crowd-'));
  onTeardown('temp dir', async () => rmSync(dir, { recursive: true, force: true }));
  const log = (line: string): void => {
    if (VERBOSE) console.error(line);
  };
  console.error('starting Postgres and the Temporal dev server...');
  const starting = startStack({ dataDir: dir, persistent: false, log, signal: aborter.signal });
  // Ctrl-C while it starts: startStack stops what it started and rejects; wait for that.
  onTeardown('Temporal and Postgres', () =>
    starting.then(
      (stack) => stack.stop(),
      () => {},
    ),
  );
  const stack = await starting;

  const [apiPort, emulatorPort] = [await freePort(), await freePort()];
  const api = `http://127.0.0.1:${apiPort}`;
  const emulatorUrl = `http://127.0.0.1:${emulatorPort}`;
  const taskQueue = `bench-crowd-${randomUUID()}`;
  const shared: NodeJS.ProcessEnv = {
    DATABASE_URL: stack.databaseUrl,
    TEMPORAL_ADDRESS: stack.temporalAddress,
    TEMPORAL_NAMESPACE: stack.temporalNamespace,
    TASK_QUEUE: taskQueue,
    STRIPE_SECRET_KEY: 'sk_test_bench',
    STRIPE_API_URL: emulatorUrl,
    STRIPE_EMULATOR: '1',
    STRIPE_WEBHOOK_SECRET: WEBHOOK_SECRET,
    ADMIN_TOKEN: ADMIN,
    SUPPORT_TOKEN: 'bench-support',
    BUYER_TOKEN_SECRET: BUYER_SECRET,
    // One machine plays the whole crowd from one address: the per-IP and per-buyer limits would be the bottleneck measured.
    RATE_LIMIT_PER_IP_PER_SECOND: '0',
    RATE_LIMIT_PER_BUYER_PER_MINUTE: '0',
    HOST: '127.0.0.1',
    PORT: String(apiPort),
    PUBLIC_URL: api,
  };
  console.error('starting the payments emulator, the worker and the API (child processes)...');
  const emulator = startNode(
    'emulator',
    'dev/emulator/main.ts',
    {
      STRIPE_EMULATOR_PORT: String(emulatorPort),
      STRIPE_EMULATOR_HOST: '127.0.0.1',
      STRIPE_WEBHOOK_SECRET: WEBHOOK_SECRET,
      STRIPE_EMULATOR_WEBHOOK_URL: `${api}/v1/webhooks/stripe`,
      PORT: String(apiPort),
    },
    /Stripe API on/,
  );
  const worker = startNode('worker', 'worker/main.ts', shared, /polling task queue/);
  // No drain pause at the end of the run: nothing routes traffic to this API but the benchmark.
  const apiChild = startNode('api', 'api/main.ts', { ...shared, SHUTDOWN_GRACE_MS: '0' }, /listening on/);
  await Promise.all([emulator.ready, worker.ready, apiChild.ready]);
  return {
    base: api,
    adminToken: ADMIN,
    buyerSecret: BUYER_SECRET,
    databaseUrl: stack.databaseUrl,
    temporalAddress: stack.temporalAddress,
    temporalNamespace: stack.temporalNamespace,
    describe: `own stack: API (pid ${apiChild.child.pid}), worker and emulator in child processes`,
  };
}

async function waitReady(client: HttpClient): Promise<void> {
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

/**
 * The API's own counters (`flashsale_*_total` with their labels, Node's process ones left out), from
 * /metrics: one API process's view of the funnel, whatever names it uses this week.
 */
async function apiCounters(client: HttpClient): Promise<Map<string, number>> {
  const m = new Map<string, number>();
  try {
    const r = await client.send('GET', '/metrics');
    for (const match of r.body.matchAll(/^(flashsale_\w+_total)(\{[^}]*\})? (\S+)$/gm)) {
      if (/^flashsale_(process|nodejs)_/.test(match[1])) continue;
      m.set(`${match[1].replace(/^flashsale_/, '')}${match[2] ?? ''}`, Number(match[3]));
    }
  } catch {
    // metrics are a nice-to-have here
  }
  return m;
}

/** Visibility is eventually consistent: poll until the count has not moved for a second. */
async function stableCount(temporal: Client, query: string, timeoutMs = 60_000): Promise<number> {
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

// ---------------------------------------------------------------------------------------------

async function main(): Promise<number> {
  const opts = readOptions(process.argv.slice(2), process.env);
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);

  const target: Target = opts.base
    ? {
        base: opts.base,
        adminToken: opts.adminToken!,
        buyerSecret: process.env.BUYER_TOKEN_SECRET ?? '',
        databaseUrl: process.env.DATABASE_URL || undefined,
        temporalAddress: process.env.TEMPORAL_ADDRESS || undefined,
        temporalNamespace: process.env.TEMPORAL_NAMESPACE || 'default',
        describe: 'an API already running',
      }
    : await startLocal();

  const client = new HttpClient(target.base, opts.concurrency);
  onTeardown('http agent', async () => client.close());
  await waitReady(client);

  let db: pg.Pool | undefined;
  if (target.databaseUrl) {
    const pool = new pg.Pool({ connectionString: target.databaseUrl, max: 2 });
    let closing = false;
    pool.on('error', (err) => closing || console.error('postgres connection error:', err.message));
    onTeardown('postgres pool', async () => {
      closing = true;
      await pool.end();
    });
    db = pool;
  }
  let temporal: Client | undefined;
  if (target.temporalAddress) {
    const connection = await Connection.connect({ address: target.temporalAddress, connectTimeout: '10s' });
    onTeardown('temporal connection', () => connection.close());
    temporal = new Client({ connection, namespace: target.temporalNamespace });
  }

  const admin = { authorization: `Bearer ${target.adminToken}` };
  const sku = `crowd-${Date.now()}`;
  const createProduct = async (s: string, stock: number) => {
    const r = await client.json('POST', '/v1/products', admin, {
      sku: s,
      name: `bench crowd ${s}`,
      priceCents: 12_900,
      currency: 'eur',
      stock,
      holdSeconds: 600,
      maxPerBuyer: 1,
    });
    if (r.status !== 201) throw new Error(`POST /v1/products ${s}: ${r.status} ${JSON.stringify(r.body)}`);
  };
  await createProduct(sku, opts.units);
  await createProduct(`${sku}-warmup`, WARMUP_UNITS);

  const tokens = {
    warmup: await buyerTokens(target.buyerSecret, 'warmup', WARMUP_BUYERS),
    crowd: await buyerTokens(target.buyerSecret, 'buyer', opts.buyers),
  };
  const buy = async (s: string, token: string) => {
    const req = purchaseRequest(s, token);
    const r = await client.send('POST', '/v1/purchases', req.headers, req.body);
    return classifyPurchase({ status: r.status, body: parseJson(r.body) });
  };
  const healthz = async () => {
    const r = await client.send('GET', '/healthz');
    return { cls: r.status === 200 ? 'ok' : `${r.status}` };
  };

  // Warm-up, not reported: sockets, JIT, the worker's first workflow tasks; both purchase answers.
  console.error(`warm-up: ${WARMUP_BUYERS} buyers for ${WARMUP_UNITS} units on ${sku}-warmup, and /healthz...`);
  await drive('warm-up healthz', opts.concurrency * 2, opts.concurrency, healthz);
  await drive('warm-up purchases', WARMUP_BUYERS, Math.min(10, opts.concurrency), (n) =>
    buy(`${sku}-warmup`, tokens.warmup[n]),
  );

  console.error(`baseline: ${opts.buyers} x GET /healthz, ${opts.concurrency} in flight...`);
  const base = await drive('baseline: GET /healthz', opts.buyers, opts.concurrency, healthz);

  const before = await apiCounters(client);
  console.error(`crowd: ${opts.buyers} buyers for ${opts.units} units, ${opts.concurrency} in flight...`);
  const crowd = await drive(
    'crowd: POST /v1/purchases',
    opts.buyers,
    opts.concurrency,
    (n) => buy(sku, tokens.crowd[n]),
    (done) =>
      [...countBy(done, (a) => a.cls)]
        .sort()
        .map(([k, v]) => `${k} ${v}`)
        .join(', '),
  );
  const after = await apiCounters(client);

  // ----- what happened
  const winners = crowd.answers.filter((a) => a.cls === 'winner');
  const soldOut = crowd.answers.filter((a) => a.cls === 'sold-out');
  const other = crowd.answers.filter((a) => a.cls !== 'winner' && a.cls !== 'sold-out');
  const baseOk = base.answers.filter((a) => a.cls === 'ok');
  const baseRate = base.answers.length / base.seconds;
  const crowdRate = crowd.answers.length / crowd.seconds;
  const baseLat = latencies(baseOk);
  const crowdLat = latencies(crowd.answers);

  console.error('counting sagas and checking stock...');
  const sagas = temporal
    ? {
        started: await stableCount(temporal, `WorkflowType="purchaseWorkflow" AND Sku="${sku}"`),
        running: await stableCount(
          temporal,
          `WorkflowType="purchaseWorkflow" AND Sku="${sku}" AND ExecutionStatus="Running"`,
        ),
      }
    : undefined;
  const product = await client.json('GET', `/v1/products/${sku}`);
  const p = product.body as { total?: number; available?: number; held?: number; sold?: number; soldOut?: boolean };
  const diffs = db ? await reconcile(db, sku) : undefined;
  const rows = db
    ? (
        await db.query<{ status: string; rejection: string | null; n: number }>(
          'SELECT status, rejection, count(*)::int AS n FROM purchases WHERE sku = $1 GROUP BY 1, 2 ORDER BY 3 DESC',
          [sku],
        )
      ).rows
    : undefined;

  // ----- the table
  const out = (line = ''): void => console.log(line);
  out(
    `crowd benchmark: ${opts.buyers} buyers for ${opts.units} units, ${opts.concurrency} requests in flight, over HTTP to ${target.base}`,
  );
  out(`(${target.describe}); machine: ${os.cpus().length} cores, node ${process.version}`);
  out('');
  out(
    `${'phase'.padEnd(30)} ${'answers'.padStart(8)} ${'wall s'.padStart(8)} ${'answers/s'.padStart(10)} ${'x healthz'.padStart(10)} ${'p50 ms'.padStart(8)} ${'p99 ms'.padStart(8)}`,
  );
  for (const [ph, rate, lat] of [
    [base, baseRate, baseLat],
    [crowd, crowdRate, crowdLat],
  ] as const) {
    out(
      `${ph.name.padEnd(30)} ${String(ph.answers.length).padStart(8)} ${fmt(ph.seconds, 1).padStart(8)} ${fmt(rate, 1).padStart(10)} ${`${fmt(rate / baseRate, 4)}x`.padStart(10)} ${fmt(lat.p50).padStart(8)} ${fmt(lat.p99).padStart(8)}`,
    );
  }
  if (baseOk.length !== base.answers.length) {
    out(`  healthz answers other than 200: ${JSON.stringify(Object.fromEntries(countBy(base.answers, (a) => a.cls)))}`);
  }
  out('');
  out(`${'crowd answers'.padEnd(30)} ${'count'.padStart(8)} ${'p50 ms'.padStart(8)} ${'p99 ms'.padStart(8)}`);
  const row = (label: string, xs: Answer[]) => {
    const l = latencies(xs);
    out(`${label.padEnd(30)} ${String(l.n).padStart(8)} ${fmt(l.p50).padStart(8)} ${fmt(l.p99).padStart(8)}`);
  };
  row('  201 winners', winners);
  row('  409 sold-out', soldOut);
  row('  other', other);
  for (const [cls] of [...countBy(other, (a) => a.cls)].sort((a, b) => b[1] - a[1])) {
    row(
      `    ${cls}`,
      other.filter((a) => a.cls === cls),
    );
  }
  const finals = countBy(soldOut, (a) => (a.final === undefined ? 'absent' : JSON.stringify(a.final)));
  out(`  sold-out "final": ${[...finals].map(([k, v]) => `${k} ${v}`).join(', ') || '-'}`);
  const outcomes = [...after]
    .map(([k, v]) => [k, v - (before.get(k) ?? 0)] as const)
    .filter(([, v]) => v > 0)
    .map(([k, v]) => `${k} ${v}`);
  if (outcomes.length) out(`  API counters during the crowd (/metrics): ${outcomes.join(', ')}`);
  out('');
  out(
    sagas
      ? `sagas started (Temporal visibility, Sku="${sku}"): ${sagas.started} (${sagas.running} still running, waiting for payment)`
      : 'sagas started: not counted (no TEMPORAL_ADDRESS)',
  );
  if (rows) {
    const total = rows.reduce((s, r) => s + r.n, 0);
    out(
      `purchase rows for the SKU: ${total} (${rows.map((r) => `${r.status}${r.rejection ? `/${r.rejection}` : ''} ${r.n}`).join(', ')})`,
    );
  }

  // ----- the answers buyers got (reported; the exit code is the stock's)
  const distinct = new Set(winners.map((a) => a.purchaseId)).size;
  const notes: Array<[string, boolean]> = [
    [
      `winners == units (${winners.length} of ${opts.units}, ${distinct} distinct purchase ids)`,
      winners.length === opts.units && distinct === winners.length,
    ],
    [`every buyer answered 201 or 409 sold-out (${other.length} other)`, other.length === 0],
  ];
  if (db) {
    // A unit held by a purchase whose buyer was not told 201 (a 503 whose saga went on and took the hold).
    const { rows: r } = await db.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM purchases
        WHERE sku = $1 AND status IN ('holding', 'awaiting_payment') AND NOT (purchase_id = ANY($2))`,
      [sku, winners.map((w) => w.purchaseId)],
    );
    notes.push([`units held by purchases whose buyer got no 201: ${r[0].n}`, r[0].n === 0]);
  }

  // ----- stock exact
  const checks: Array<[string, boolean]> = [];
  if (product.status === 200) {
    checks.push([
      `product: total ${p.total}, available ${p.available}, held ${p.held}, sold ${p.sold}: held + sold == ${opts.units}`,
      (p.held ?? NaN) + (p.sold ?? NaN) === opts.units && p.total === opts.units,
    ]);
    checks.push([`product: available == 0 (soldOut ${p.soldOut})`, p.available === 0]);
  } else {
    checks.push([`GET /v1/products/${sku}: ${product.status}`, false]);
  }
  if (diffs) {
    checks.push([`reconcile: ${diffs.length ? JSON.stringify(diffs) : 'no difference'}`, diffs.length === 0]);
  } else {
    checks.push(['reconcile: skipped (no DATABASE_URL)', true]);
  }
  out('');
  out('answers:');
  for (const [what, ok] of notes) out(`  ${ok ? 'ok  ' : 'NOTE'} ${what}`);
  out('stock exact:');
  for (const [what, ok] of checks) out(`  ${ok ? 'ok  ' : 'FAIL'} ${what}`);
  out('');
  out(
    `crowd / healthz: answers/s ${fmt(crowdRate / baseRate, 4)}x, p50 latency ${fmt(crowdLat.p50 / baseLat.p50, 1)}x`,
  );
  return checks.every(([, ok]) => ok) ? 0 : 1;
}

main().then(
  async (code) => {
    await teardown();
    process.exit(code);
  },
  async (err: unknown) => {
    if (err instanceof UsageError) console.error(err.message);
    else if (!aborter.signal.aborted) console.error(err);
    await teardown();
    process.exit(aborter.signal.aborted ? 130 : err instanceof UsageError ? 2 : 1);
  },
);
