// `npm run bench:dev-server`: how fast the local Temporal dev server takes saga-shaped workflow starts
// (the crowd's floor, bench/crowd-floor.ts) under each way the launcher can run it, one after the other
// in the same run, so the figures compare on one machine. A CLI of another version is given with
// `--cli PATH` (repeatable, e.g. a Go-built v1.5.1); the default is the one the launcher finds.
//   npm run bench:dev-server -- --starts 2000 --concurrency 64 --cli /path/to/temporal-1.5.1
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { Client, Connection } from '@temporalio/client';
import { findTemporalCli, serverVersionOf } from '../dev/temporal-cli';
import { devServerArgs, waitForTemporal } from '../dev/temporal';
import { spawnChild } from '../dev/proc';
import { freePort } from '../dev/ports';
import { startsFloor } from './crowd-floor';
import type { Answer, Phase } from './crowd-report';

const { values } = parseArgs({
  options: {
    starts: { type: 'string', default: '2000' },
    concurrency: { type: 'string', default: '64' },
    cli: { type: 'string', multiple: true, default: [] },
    rounds: { type: 'string', default: '3' },
  },
});
const rounds = Number(values.rounds);
const starts = Number(values.starts);
const concurrency = Number(values.concurrency);

interface Variant {
  name: string;
  cli: string;
  /** Drops these dynamic-config keys from the launcher's flags (the "before" of a change). */
  without?: string[];
  /** Adds these (key=value). */
  with?: string[];
  /** SQLite file and pragmas; in memory without. */
  sqlite?: string[];
}

async function drive(
  name: string,
  count: number,
  inFlight: number,
  once: (n: number) => Promise<Omit<Answer, 'ms'>>,
): Promise<Phase> {
  const answers: Answer[] = [];
  let next = 0;
  const started = Date.now();
  await Promise.all(
    Array.from({ length: Math.min(inFlight, count) }, async () => {
      while (next < count) {
        const n = next++;
        const t0 = Date.now();
        let a: Omit<Answer, 'ms'>;
        try {
          a = await once(n);
        } catch (err) {
          a = { cls: `error ${(err as Error).message.slice(0, 60)}` };
        }
        answers.push({ ...a, ms: Date.now() - t0 });
      }
    }),
  );
  return { name, answers, seconds: (Date.now() - started) / 1000 };
}

/** The launcher's flags for this CLI, with a variant's keys taken out or added. */
function argsFor(v: Variant, version: [number, number, number], port: number, uiPort: number, dir: string): string[] {
  const args = devServerArgs({ port, uiPort, namespace: 'default', version });
  const out: string[] = [];
  for (let i = 0; i < args.length; i++) {
    if (args[i] === '--dynamic-config-value' && v.without?.some((k) => args[i + 1].startsWith(`${k}=`))) {
      i++;
      continue;
    }
    out.push(args[i]);
  }
  for (const kv of v.with ?? []) out.push('--dynamic-config-value', kv);
  if (v.sqlite) {
    out.push('--db-filename', path.join(dir, `${v.name.replace(/\W+/g, '-')}.db`));
    for (const p of v.sqlite) out.push('--sqlite-pragma', p);
  }
  return out;
}

interface Measured {
  version: string;
  rate: number;
  p50: number;
  p99: number;
  ok: number;
}

async function measure(v: Variant, dir: string): Promise<Measured> {
  const version = await serverVersionOf(v.cli);
  const port = await freePort();
  const uiPort = await freePort();
  const server = spawnChild({
    name: 'temporal',
    command: v.cli,
    args: argsFor(v, version, port, uiPort, dir),
    deathSignal: 'SIGTERM',
    stopSteps: [['SIGTERM', 10_000]],
  });
  const address = `127.0.0.1:${port}`;
  try {
    await waitForTemporal({ address, namespace: 'default', timeoutMs: 60_000, server });
    const connection = await Connection.connect({ address });
    try {
      const client = new Client({ connection });
      // A warm-up, so the first phase does not pay for connections and caches the others reuse.
      await startsFloor(client, { sku: 'warm', count: 200, concurrency, drive });
      const phase = await startsFloor(client, { sku: 'bench', count: starts, concurrency, drive });
      const ok = phase.answers.filter((a) => a.cls === 'ok').length;
      const rate = ok / phase.seconds;
      const ms = phase.answers.map((a) => a.ms).sort((a, b) => a - b);
      const p50 = ms[Math.floor(ms.length / 2)];
      const p99 = ms[Math.floor(ms.length * 0.99)];
      return { version: version.join('.'), rate, p50, p99, ok };
    } finally {
      await connection.close();
    }
  } finally {
    await server.stop();
  }
}

async function main(): Promise<void> {
  const pinned = await findTemporalCli((line) => console.error(line));
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-dev-server-'));
  const OLD_KEYS = ['system.forceSearchAttributesCacheRefreshOnRead'];
  const variants: Variant[] = [];
  for (const cli of values.cli) {
    variants.push(
      { name: `${path.basename(cli)}: the old flags`, cli, without: OLD_KEYS },
      { name: `${path.basename(cli)}: launcher flags`, cli },
    );
  }
  variants.push(
    { name: 'pinned CLI: without search-attribute cache flag', cli: pinned, without: OLD_KEYS },
    { name: 'pinned CLI: launcher flags (in memory, as npm test)', cli: pinned },
    {
      name: 'pinned CLI: launcher flags, SQLite WAL + synchronous=NORMAL',
      cli: pinned,
      sqlite: ['journal_mode=WAL', 'synchronous=NORMAL'],
    },
    {
      name: 'pinned CLI: launcher flags, SQLite WAL + synchronous=OFF',
      cli: pinned,
      sqlite: ['journal_mode=WAL', 'synchronous=OFF'],
    },
  );
  console.log(
    `dev server start rate: ${starts} saga-shaped starts, ${concurrency} in flight, ${os.cpus().length} cores, ` +
      `${rounds} rounds (variants interleaved; the median round shown)`,
  );
  const results = new Map<Variant, Measured[]>(variants.map((v) => [v, []]));
  try {
    // Interleaved rounds: a noisy minute on a shared machine hits every variant alike.
    for (let round = 0; round < rounds; round++) {
      for (const v of variants) results.get(v)!.push(await measure(v, dir));
    }
    for (const [v, runs] of results) {
      const sorted = [...runs].sort((a, b) => a.rate - b.rate);
      const m = sorted[Math.floor(sorted.length / 2)];
      const all = runs.map((r) => r.rate.toFixed(0)).join('/');
      console.log(
        `${v.name.padEnd(60)} server ${m.version}  ${m.rate.toFixed(0).padStart(4)} starts/s (${all})  ` +
          `p50 ${m.p50} ms  p99 ${m.p99} ms  (${m.ok}/${starts} ok)`,
      );
    }
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

main().then(
  () => process.exit(0),
  (err: Error) => {
    console.error(err.stack ?? err.message);
    process.exit(1);
  },
);
