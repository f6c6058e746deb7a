// `npm run bench:bot-check`: what the bot check (api/bot-check.ts) costs. A buyer's solve at the
// default BOT_CHECK_MAX_NUMBER, with altcha-lib's own solver in Node (one core, as a phone's one
// widget worker), and what 1,000 solves cost a bot (CPU-seconds); beside them, what the server pays
// per challenge and per verification. `--max-number N` measures another cost; `--solves N` the sample.
import { parseArgs } from 'node:util';
import { solveChallenge } from 'altcha-lib';
import { deriveKey } from 'altcha-lib/algorithms/pbkdf2';
import { BotCheck } from '../api/bot-check';
import { DEFAULT_BOT_CHECK_MAX_NUMBER } from '../config';
import { hostClock } from '../store/clock';
import type { Db } from '../store/db';

const { values } = parseArgs({
  options: { 'max-number': { type: 'string' }, solves: { type: 'string' } },
});
const maxNumber = Number(values['max-number'] ?? DEFAULT_BOT_CHECK_MAX_NUMBER);
const solves = Number(values.solves ?? 40);

const cpuMs = (since: NodeJS.CpuUsage) => {
  const u = process.cpuUsage(since);
  return (u.user + u.system) / 1000;
};

async function main(): Promise<void> {
  // Spending touches Postgres; creating and verifying here do not (the store is never reached).
  const check = new BotCheck({} as Db, hostClock, {
    secret: 'bench-bot-check-secret-0123456789abcdef',
    maxNumber,
  });
  const walls: number[] = [];
  let createCpu = 0;
  let solveCpu = 0;
  for (let i = 0; i < solves; i++) {
    const c0 = process.cpuUsage();
    const challenge = await check.challenge();
    createCpu += cpuMs(c0);
    const s0 = process.cpuUsage();
    const t0 = performance.now();
    await solveChallenge({ challenge, deriveKey });
    walls.push(performance.now() - t0);
    solveCpu += cpuMs(s0);
  }
  walls.sort((a, b) => a - b);
  const mean = walls.reduce((a, b) => a + b, 0) / walls.length;
  const at = (q: number) => walls[Math.min(walls.length - 1, Math.floor(q * walls.length))];
  const perSolveCpu = solveCpu / solves;
  console.log(
    `bot check: PBKDF2-SHA-256, 1000 iterations per attempt, counter drawn from [${Math.ceil(maxNumber / 2)}, ${maxNumber}]`,
  );
  console.log(
    `  one solve (Node, altcha-lib's solver, one core): mean ${mean.toFixed(0)} ms, p50 ${at(0.5).toFixed(0)} ms, p90 ${at(0.9).toFixed(0)} ms (${solves} solves)`,
  );
  console.log(
    `  CPU per solve ${perSolveCpu.toFixed(0)} ms: 1,000 bot joins cost ${perSolveCpu.toFixed(0)} CPU-seconds`,
  );
  console.log(
    `  server: ${(createCpu / solves).toFixed(2)} ms CPU per challenge created (one derivation; verifying is one HMAC)`,
  );
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
