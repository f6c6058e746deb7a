import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { Client, Connection } from '@temporalio/client';
import pg from 'pg';
import { signBuyerToken } from '../config/buyer-tokens';
import { reconcile } from '../store/reconcile';
import { CheckoutFollower } from './crowd-checkouts';
import { startsFloor } from './crowd-floor';
import { roomBench } from './crowd-room';
import { stripeBench } from './crowd-stripe';
import { countBy, printReport, verdicts, type Answer, type Phase } from './crowd-report';
import { apiCounters, HttpClient, parseJson } from './http-client';
import { readOptions, UsageError } from './crowd-options';
import { stableCount, startLocal, waitReady, type Target } from './crowd-target';
import { aborter, onSignal, onTeardown, teardown } from './teardown';

/**
 * `npm run bench:crowd`: a flash-sale crowd over HTTP. N buyers (default 10,000) for M units (default
 * 600), C requests in flight (default 256), each buyer one POST /v1/purchases with its own
 * Idempotency-Key; beside GET /healthz of the same API at the same concurrency and the same count in
 * the same run. Prints answers/s and the ratio to the bare route, p50/p99 of the winners' 201s and of
 * the sold-out answers, the sagas started (Temporal visibility), and checks the stock is exact.
 *
 * --respond-async (BENCH_RESPOND_ASYNC=1) sends `Prefer: respond-async` on every purchase, as a real
 * flash-sale client would: a winner's answer is then the 202 (purchase id and Location, once the permit
 * is granted and the saga started), and the bench follows every accepted purchase (bench/crowd-checkouts.ts,
 * at most 120 s after the crowd) until it reached awaiting_payment with a checkout URL or a final
 * status, and prints the time to all checkouts (from the crowd's first request) and how many got one.
 *
 * On the stack it started, it then measures Temporal's floor (bench/crowd-floor.ts): as many
 * saga-shaped workflow starts as there are units, with no worker, at the same concurrency. Each
 * winner's answer waits for one start, so this is what the server alone costs the crowd.
 *
 * Flags (or env): --buyers (BENCH_BUYERS), --units (BENCH_UNITS), --concurrency (BENCH_CONCURRENCY),
 * --respond-async (BENCH_RESPOND_ASYNC=1), --room (BENCH_ROOM=1: the waiting room's join and poll
 * routes instead of purchases, bench/crowd-room.ts; `npm run bench:room`),
 * --base URL (BENCH_BASE_URL) to run against an API that is already up, with --admin-token
 * (BENCH_ADMIN_TOKEN, else ADMIN_TOKEN); DATABASE_URL and TEMPORAL_ADDRESS then name its Postgres and
 * Temporal for the checks that need them (skipped without them). Without --base it starts a throwaway
 * stack in a temp dir (Postgres and a Temporal dev server, or those named by DATABASE_URL and
 * TEMPORAL_ADDRESS, as bench:saga does) and the payments emulator, the worker and the API as child
 * processes, so the API is measured alone on its event loop as in production. BENCH_VERBOSE=1 echoes
 * their output. Ctrl-C stops everything. Exits 1 when the stock is not exact (answers other than 201
 * (202) and sold-out, units held by buyers who got no 201 (202), or accepted purchases that got no
 * checkout URL, are reported but do not fail the run).
 */

/** Longer than the API's own deadline (PURCHASE_TIMEOUT_MS, 20 s): the API should answer first. */
const REQUEST_TIMEOUT_MS = 120_000;
/** --respond-async: how long after the crowd to wait for the last checkout URL. */
const CHECKOUT_WAIT_MS = 120_000;
const WARMUP_BUYERS = 20;
const WARMUP_UNITS = 5;

// ---------------------------------------------------------------------------------------------
// Buyers

/** One buyer's request, built in one place: buyer `buyer-<n>`, with that buyer's token. */
function purchaseRequest(
  sku: string,
  token: string,
  respondAsync: boolean,
): { headers: Record<string, string>; body: string } {
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    'idempotency-key': randomUUID(),
    authorization: `Bearer ${token}`,
  };
  if (respondAsync) headers.prefer = 'respond-async';
  return { headers, body: JSON.stringify({ sku }) };
}

/** Buyer tokens for `buyer-0` … `buyer-<count-1>`, signed before the clock starts (the merchant's login issues them). */
async function buyerTokens(secret: string, prefix: string, count: number): Promise<string[]> {
  return Promise.all(Array.from({ length: count }, (_, n) => signBuyerToken(secret, `${prefix}-${n}`)));
}

// ---------------------------------------------------------------------------------------------
// Driving N requests with C in flight, classifying each answer.

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

/** A winner's answer is a 201 with its checkout URL, or with --respond-async a 202 with its purchase id. */
function classifyPurchase(
  r: { status: number; body: Record<string, unknown> },
  respondAsync: boolean,
): Omit<Answer, 'ms'> {
  const type = typeof r.body.type === 'string' ? r.body.type : undefined;
  if (!respondAsync && r.status === 201 && typeof r.body.checkoutUrl === 'string') {
    return { cls: 'winner', purchaseId: String(r.body.purchaseId) };
  }
  if (respondAsync && r.status === 202 && typeof r.body.purchaseId === 'string') {
    return { cls: 'winner', purchaseId: r.body.purchaseId };
  }
  if (r.status === 409 && type === 'sold-out') return { cls: 'sold-out', final: r.body.final };
  return {
    cls: `${r.status} ${type ?? (r.status === 201 ? (respondAsync ? 'instead of 202' : 'without checkoutUrl') : '(no problem type)')}`,
  };
}

// ---------------------------------------------------------------------------------------------
// The local stack: Postgres + Temporal (dev/stack.ts), then emulator, worker and API as children.

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
    : await startLocal(opts);

  const client = new HttpClient(target.base, opts.concurrency, REQUEST_TIMEOUT_MS);
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
    const req = purchaseRequest(s, token, opts.respondAsync);
    const r = await client.send('POST', '/v1/purchases', req.headers, req.body);
    return classifyPurchase({ status: r.status, body: parseJson(r.body) }, opts.respondAsync);
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

  if (opts.room) {
    const args = {
      client,
      admin,
      sku: `${sku}-room`,
      tokens: tokens.crowd,
      concurrency: opts.concurrency,
      healthz: base,
      apiPid: target.apiPid,
    };
    return roomBench({ ...args, drive });
  }

  if (opts.stripeRate !== undefined) {
    if (!target.emulatorUrl) throw new UsageError('--stripe-rate needs the stack this run starts (not --base)');
    return stripeBench({
      client,
      db,
      emulatorUrl: target.emulatorUrl,
      describe: target.describe,
      sku,
      units: opts.units,
      tokens: tokens.crowd,
      concurrency: opts.concurrency,
      stripeRate: opts.stripeRate,
      stripeBudget: opts.stripeBudget!,
      drive,
      healthz: base,
    });
  }

  const before = await apiCounters(client);
  console.error(
    `crowd: ${opts.buyers} buyers for ${opts.units} units, ${opts.concurrency} in flight${opts.respondAsync ? ', Prefer: respond-async' : ''}...`,
  );
  // --respond-async: every 202 is followed until its checkout URL shows (through Postgres from now on, if known).
  const watch = opts.respondAsync ? new CheckoutFollower(performance.now(), client, db, aborter.signal) : undefined;
  watch?.start();
  const crowd = await drive(
    'crowd: POST /v1/purchases',
    opts.buyers,
    opts.concurrency,
    async (n) => {
      const a = await buy(sku, tokens.crowd[n]);
      if (watch && a.cls === 'winner') watch.add({ purchaseId: a.purchaseId!, token: tokens.crowd[n] });
      return a;
    },
    (done) =>
      [...countBy(done, (a) => a.cls)]
        .sort()
        .map(([k, v]) => `${k} ${v}`)
        .join(', '),
  );
  const after = await apiCounters(client);
  if (watch)
    console.error(`waiting (at most ${CHECKOUT_WAIT_MS / 1000}s) for the accepted purchases' checkout URLs...`);
  const checkouts = await watch?.finish(CHECKOUT_WAIT_MS);

  const winners = crowd.answers.filter((a) => a.cls === 'winner');

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
  const diffs = db ? await reconcile(db, sku) : undefined;
  const rows = db
    ? (
        await db.query<{ status: string; rejection: string | null; n: number }>(
          'SELECT status, rejection, count(*)::int AS n FROM purchases WHERE sku = $1 GROUP BY 1, 2 ORDER BY 3 DESC',
          [sku],
        )
      ).rows
    : undefined;

  // Purchases whose buyer was not told 201/202 (a 503): units their saga held anyway (it went on and took
  // the hold), and rows left in `holding` with no hold at all (their saga never started).
  const untold = db
    ? (
        await db.query<{ units: number; stranded: number }>(
          `SELECT coalesce(sum(h.quantity) FILTER (WHERE h.status = 'active'), 0)::int AS units,
                  count(*) FILTER (WHERE p.status = 'holding' AND h.purchase_id IS NULL)::int AS stranded
             FROM purchases p LEFT JOIN holds h USING (purchase_id)
            WHERE p.sku = $1 AND p.status IN ('holding', 'awaiting_payment') AND NOT (p.purchase_id = ANY($2))`,
          [sku, winners.map((w) => w.purchaseId)],
        )
      ).rows[0]
    : undefined;
  // Temporal's floor, on the stack this run started only (never in someone else's namespace).
  const floor =
    temporal && !opts.base
      ? await startsFloor(temporal, { sku, count: opts.units, concurrency: opts.concurrency, drive })
      : undefined;
  const { notes, checks } = verdicts({ ...opts, sku, crowd, checkouts, untold, product, diffs });

  printReport({
    ...opts,
    base: target.base,
    describe: target.describe,
    sku,
    healthz: base,
    crowd,
    counters: [...after]
      .map(([k, v]) => [k, v - (before.get(k) ?? 0)] as const)
      .filter(([, v]) => v > 0)
      .map(([k, v]) => `${k} ${v}`),
    sagas,
    floor,
    rows,
    checkouts,
    notes,
    checks,
  });
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
