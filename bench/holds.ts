import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { HoldDesk } from '../store/hold-desk';
import type { HoldResult } from '../store/hold-types';
import { takeHold } from '../store/holds';
import { migrate } from '../store/migrate';
import { createProduct } from '../store/products';
import { reconcile } from '../store/reconcile';
import type { PurchaseInput } from '../vocabulary';
import { startPostgres } from '../dev/postgres';

/**
 * `npm run bench:holds`: holds per second on one hot SKU with 1, 16 and 64 concurrent buyers,
 * durable commits (fsync on), side by side in one run: the plain conditional update (one
 * bucket row), the same over 10 bucket rows, and the hold desk (coalesced batches). Prints each
 * figure and its ratio to the plain update at the same concurrency, then proves zero oversell.
 *
 * Each figure is the median of BENCH_ROUNDS (default 3) interleaved rounds of BENCH_SECONDS (default 3)
 * per cell. Env: DATABASE_URL (else a throwaway local Postgres), BENCH_SECONDS, BENCH_ROUNDS.
 */

const SECONDS = Number(process.env.BENCH_SECONDS ?? 3);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
}
const CONCURRENCY = [1, 16, 64];

type Mode = 'plain' | 'bucketed' | 'desk';

async function runCell(db: pg.Pool, mode: Mode, concurrency: number, seconds = SECONDS): Promise<number> {
  const sku = `bench-${mode}-${concurrency}-${Date.now()}`;
  await createProduct(db, {
    sku,
    name: 'bench',
    priceCents: 100,
    currency: 'usd',
    stock: 10_000_000,
    buckets: mode === 'bucketed' ? 10 : 1,
    holdSeconds: 3600,
  });
  const desk = new HoldDesk(db);
  const take = (req: PurchaseInput): Promise<HoldResult> => (mode === 'desk' ? desk.take(req) : takeHold(db, req));
  let held = 0;
  let seq = 0;
  const deadline = Date.now() + seconds * 1000;
  const started = process.hrtime.bigint();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (Date.now() < deadline) {
        const n = seq++;
        const r = await take({ purchaseId: `${sku}-${n}`, sku, buyerId: `b${n}`, quantity: 1 });
        if (r.outcome !== 'held') throw new Error(`unexpected ${r.outcome}`);
        held++;
      }
    }),
  );
  const elapsed = Number(process.hrtime.bigint() - started) / 1e9;
  const diffs = await reconcile(db, sku);
  if (diffs.length) throw new Error(`${sku} does not reconcile: ${JSON.stringify(diffs)}`);
  return held / elapsed;
}

/** 64 buyers per unit on a small stock, for each mode: exactly `stock` holds, nothing below zero. */
async function proveNoOversell(db: pg.Pool, mode: Mode): Promise<string> {
  const stock = 50;
  const sku = `bench-oversell-${mode}-${Date.now()}`;
  await createProduct(db, {
    sku,
    name: 'bench',
    priceCents: 100,
    currency: 'usd',
    stock,
    buckets: mode === 'bucketed' ? 10 : 1,
  });
  const desk = new HoldDesk(db);
  const results = await Promise.all(
    Array.from({ length: stock * 20 }, (_, n) => {
      const req = { purchaseId: `${sku}-${n}`, sku, buyerId: `b${n}`, quantity: 1 };
      return mode === 'desk' ? desk.take(req) : takeHold(db, req);
    }),
  );
  const held = results.filter((r) => r.outcome === 'held').length;
  const { rows } = await db.query<{ available: number }>(
    'SELECT sum(available)::int AS available FROM stock_buckets WHERE sku = $1',
    [sku],
  );
  const diffs = await reconcile(db, sku);
  const ok = held === stock && rows[0].available === 0 && diffs.length === 0;
  if (!ok) throw new Error(`${mode}: ${held} holds for ${stock} units, available ${rows[0].available}`);
  return `${mode}: ${results.length} requests for ${stock} units -> ${held} holds, available ${rows[0].available}, reconcile clean`;
}

async function main(): Promise<void> {
  let url = process.env.DATABASE_URL;
  let stop = async () => {};
  if (!url) {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'bench-holds-'));
    const server = await startPostgres({ dataDir: path.join(dir, 'pg'), log: (l) => console.error(l) });
    url = server.url;
    stop = async () => {
      await server.stop();
      rmSync(dir, { recursive: true, force: true });
    };
  }
  await migrate(url);
  const db = new pg.Pool({ connectionString: url, max: 70 });
  // Idle connections see the server stop at the end of the run; anything earlier is worth a line.
  let closing = false;
  db.on('error', (err) => closing || console.error('postgres connection error:', err.message));
  try {
    const { rows } = await db.query<{ fsync: string; sc: string }>(
      "SELECT current_setting('fsync') AS fsync, current_setting('synchronous_commit') AS sc",
    );
    console.log(
      `hold throughput on one hot SKU, median of ${ROUNDS} interleaved rounds of ${SECONDS}s per cell, fsync=${rows[0].fsync}, synchronous_commit=${rows[0].sc}`,
    );
    console.log(`machine: ${os.cpus().length} cores, node ${process.version}`);
    // Warm-up, not reported: connections, the plpgsql function's cached plans, the JIT.
    await runCell(db, 'desk', 64, 3);
    console.log('');
    console.log('buyers | plain (1 row) holds/s | bucketed (10 rows) holds/s  x plain | hold desk holds/s  x plain');
    console.log('-------|-----------------------|----------------------------------|--------------------------');
    for (const c of CONCURRENCY) {
      // Interleaved rounds, median of each: a burst of noise from a neighbour hits one round, not one mode.
      const runs: Record<Mode, number[]> = { plain: [], bucketed: [], desk: [] };
      for (let round = 0; round < ROUNDS; round++) {
        for (const mode of ['plain', 'bucketed', 'desk'] as const) {
          // Each cell starts right after a checkpoint, so none of them pays for another's dirty pages.
          await db.query('CHECKPOINT').catch(() => {});
          runs[mode].push(await runCell(db, mode, c));
        }
      }
      const plain = median(runs.plain);
      const bucketed = median(runs.bucketed);
      const desk = median(runs.desk);
      console.log(
        `${String(c).padStart(6)} | ${plain.toFixed(0).padStart(21)} | ${bucketed.toFixed(0).padStart(20)} ${(bucketed / plain).toFixed(2).padStart(10)}x | ${desk.toFixed(0).padStart(17)} ${(desk / plain).toFixed(2).padStart(7)}x`,
      );
      console.log(
        `       | rounds: ${runs.plain.map((x) => x.toFixed(0)).join(' ')} | ${runs.bucketed.map((x) => x.toFixed(0)).join(' ')} | ${runs.desk.map((x) => x.toFixed(0)).join(' ')}`,
      );
    }
    console.log('');
    console.log('zero oversell:');
    for (const mode of ['plain', 'bucketed', 'desk'] as const) console.log(`  ${await proveNoOversell(db, mode)}`);
  } finally {
    closing = true;
    await db.end();
    await stop();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
