import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import test from 'ava';

// `npm run drill` with bots in the crowd (`--mix bot=<share>`): the product has the bot check and a
// limit per address; the humans solve each challenge and ship to addresses of their own, the bots
// send no solution or replay a spent one and ship to one address. Every bot must be stopped by a
// named rule, and no human by any.

const root = path.resolve(__dirname, '../..');

function runDrill(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', path.join(root, 'drill/main.ts'), ...args], {
      cwd: root,
      env: process.env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

test('a drill with 20 % bots: every bot stopped by a named rule, no human stopped by one, every invariant held', async (t) => {
  t.timeout(240_000);
  const out = fs.mkdtempSync(path.join(os.tmpdir(), 'drill-test-bots-'));
  const buyers = 150;
  // The other shares add up to 1: bot=0.25 is 20 % of the crowd once normalised.
  const run = await runDrill([
    ...['--buyers', String(buyers), '--units', '15', '--hold', '6', '--arrival', '2', '--settle', '45'],
    ...['--mix', 'bot=0.25', '--seed', '5', '--out', out],
  ]);
  t.is(run.code, 0, `drill exited ${run.code}:\n${run.stdout}\n${run.stderr.slice(-3000)}`);
  const summary = JSON.parse(fs.readFileSync(path.join(out, 'summary.json'), 'utf8'));
  const records: Array<{ behaviour: string; outcome: string }> = JSON.parse(
    fs.readFileSync(path.join(out, 'buyers.json'), 'utf8'),
  );
  const bots = records.filter((b) => b.behaviour === 'bot');
  t.true(bots.length >= 20 && bots.length <= 45, `${bots.length} bots of ${buyers}`);
  t.is(summary.options.mix.bot, 0.2);

  // What each rule stopped, in the summary and the report.
  t.false('not stopped' in summary.rules.bots, JSON.stringify(summary.rules));
  t.is(
    Object.values<number>(summary.rules.bots).reduce((a, b) => a + b, 0),
    bots.length,
    'every bot is counted under one rule',
  );
  t.true((summary.rules.bots['bot check: missing'] ?? 0) > 0);
  t.true((summary.rules.bots['bot check: reused'] ?? 0) > 0, 'some bots replayed a spent solution');
  t.deepEqual(Object.keys(summary.rules.humans), ['not stopped']);
  t.true(summary.rules.humansSolved >= buyers - bots.length, 'every human solved at least one challenge');
  const check = summary.invariants.find((c: any) => c.name.startsWith('every bot stopped'));
  t.is(check?.result, 'pass', JSON.stringify(check));
  t.true(
    summary.invariants.every((c: any) => c.result === 'pass'),
    JSON.stringify(summary.invariants),
  );
  // Humans' outcomes are the ones their behaviour explains: bought, refunded with a reason of stock, or none.
  for (const b of records.filter((r) => r.behaviour !== 'bot')) t.false(b.outcome.startsWith('stopped_'), b.outcome);
  t.is(summary.headline.oversold, 0);
  t.is(summary.headline.lost, 0);
  const html = fs.readFileSync(path.join(out, 'report.html'), 'utf8');
  t.regex(html, /The drop's rules/);
  t.regex(run.stdout, /rules: bots: bot check/);
});
