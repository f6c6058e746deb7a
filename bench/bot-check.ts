// `npm run bench:bot-check`: what the bot check (api/bot-check.ts) costs. A buyer's solve at the
// default BOT_CHECK_MAX_NUMBER, with altcha-lib's own solver in Node (one core, as a phone's one
// widget worker, searching from 0 as the widget does), and what 1,000 solves cost a bot
// (CPU-seconds); a bot that searches only the upper half of [0, BOT_CHECK_MAX_NUMBER] on the same
// challenges, and what each solution it gets costs it; what the server pays per challenge, through
// the HTTP app beside /healthz (bench/bot-check-issuing.ts); and, with `--browser`, the buyer's own
// solve: the `altcha` widget the pages serve, in headless Chromium (CHROMIUM_PATH), one widget
// worker, at full speed and at DevTools' CPU slowdown (`--cpu-slowdown`, default 4, what Lighthouse
// uses for a mid-range phone). `--max-number N` measures another cost; `--solves N` the sample;
// `--requests N` and `--rounds N` the server's.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { parseArgs } from 'node:util';
import { solveChallenge } from 'altcha-lib';
import { deriveKey } from 'altcha-lib/algorithms/pbkdf2';
import { BotCheck } from '../api/bot-check';
import { WIDGET_PATH, WIDGET_SCRIPT } from '../api/routes/bot-check';
import { launchBrowser } from '../test/helpers/browser';
import { searchCounters } from '../test/helpers/bot-solver';
import { measureIssuing } from './bot-check-issuing';
import { DEFAULT_BOT_CHECK_MAX_NUMBER } from '../config';
import { hostClock } from '../store/clock';
import type { Db } from '../store/db';

const { values } = parseArgs({
  options: {
    'max-number': { type: 'string' },
    solves: { type: 'string' },
    browser: { type: 'boolean' },
    'cpu-slowdown': { type: 'string' },
    requests: { type: 'string' },
    rounds: { type: 'string' },
  },
});
const maxNumber = Number(values['max-number'] ?? DEFAULT_BOT_CHECK_MAX_NUMBER);
const solves = Number(values.solves ?? 40);

const cpuMs = (since: NodeJS.CpuUsage) => {
  const u = process.cpuUsage(since);
  return (u.user + u.system) / 1000;
};

/** "mean 145 ms, p50 …, p90 …": a sample of wall times. */
function spread(walls: number[]): string {
  const sorted = [...walls].sort((a, b) => a - b);
  const mean = sorted.reduce((a, b) => a + b, 0) / sorted.length;
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
  return `mean ${mean.toFixed(0)} ms, p50 ${at(0.5).toFixed(0)} ms, p90 ${at(0.9).toFixed(0)} ms (${sorted.length} solves)`;
}

// The widget as the product pages embed it (web/bot-check.ts), with one worker (a phone's one core
// for it) and without its 0.5 s minimum display, so the figure is the work alone.
const PAGE = `<!doctype html><html><body>
<script type="module" src="${WIDGET_PATH}"></script>
<altcha-widget challenge="/challenge" name="altcha" auto="off" workers="1" configuration='{"minDuration":0}'></altcha-widget>
</body></html>`;

/** One solve by the widget in the page, from its challenge's fetch to `verified`, in ms (page script: no DOM types here). */
const SOLVE_IN_PAGE = `(async () => {
  await customElements.whenDefined('altcha-widget');
  const widget = document.querySelector('altcha-widget');
  return await new Promise((resolve, reject) => {
    const t0 = performance.now();
    widget.addEventListener('statechange', (ev) => {
      if (ev.detail.state === 'verified') resolve(performance.now() - t0);
      if (ev.detail.state === 'error') reject(new Error('the widget reported an error'));
    });
    widget.verify();
  });
})()`;

/** The buyer's side: Chromium solving with the widget, at full speed and at the CPU slowdown. */
async function measureInBrowser(check: BotCheck, slowdown: number): Promise<void> {
  const server = http.createServer((req, res) => {
    if (req.url === WIDGET_PATH) {
      res.writeHead(200, { 'content-type': 'text/javascript' }).end(WIDGET_SCRIPT);
    } else if (req.url === '/challenge') {
      void check
        .challenge()
        .then((c) => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(c)));
    } else {
      res.writeHead(200, { 'content-type': 'text/html' }).end(PAGE);
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const browser = await launchBrowser();
  try {
    const page = await browser.newPage();
    const cdp = await page.context().newCDPSession(page);
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
    for (const rate of [1, slowdown]) {
      await cdp.send('Emulation.setCPUThrottlingRate', { rate });
      const walls: number[] = [];
      for (let i = 0; i < solves; i++) {
        await page.goto(url);
        walls.push(await page.evaluate<number>(SOLVE_IN_PAGE));
      }
      const label = rate === 1 ? 'full speed' : `${rate}x CPU slowdown`;
      console.log(`  one solve (Chromium, the altcha widget, one worker, ${label}): ${spread(walls)}`);
    }
  } finally {
    await browser.close();
    server.close();
  }
}

async function main(): Promise<void> {
  // Spending touches Postgres; creating and verifying here do not (the store is never reached).
  const check = new BotCheck({} as Db, hostClock, {
    secret: 'bench-bot-check-secret-0123456789abcdef',
    maxNumber,
  });
  const walls: number[] = [];
  const counters: number[] = [];
  let solveCpu = 0;
  // The bot that skips the lower half: what it tries, what it spends, what it gets.
  const half = Math.ceil(maxNumber / 2);
  const halfway = { attempts: 0, cpu: 0, solved: 0 };
  for (let i = 0; i < solves; i++) {
    const challenge = await check.challenge();
    const s0 = process.cpuUsage();
    const t0 = performance.now();
    const solution = await solveChallenge({ challenge, deriveKey });
    walls.push(performance.now() - t0);
    solveCpu += cpuMs(s0);
    counters.push(solution!.counter);
    const b0 = process.cpuUsage();
    const bot = await searchCounters(challenge, half, maxNumber);
    halfway.cpu += cpuMs(b0);
    halfway.attempts += bot.attempts;
    if (bot.solution) halfway.solved++;
  }
  const perSolveCpu = solveCpu / solves;
  const widgetAttempts = counters.reduce((a, c) => a + c + 1, 0);
  console.log(
    `bot check: PBKDF2-SHA-256, 1000 iterations per attempt, max number ${maxNumber}, counters drawn ${Math.min(...counters)} to ${Math.max(...counters)}`,
  );
  console.log(`  one solve (Node, altcha-lib's solver from 0, one core): ${spread(walls)}`);
  console.log(
    `  CPU per solve ${perSolveCpu.toFixed(0)} ms (${(widgetAttempts / solves).toFixed(0)} attempts): 1,000 bot joins cost ${perSolveCpu.toFixed(0)} CPU-seconds`,
  );
  const perBought = (x: number) => (halfway.solved ? (x / halfway.solved).toFixed(0) : 'n/a');
  console.log(
    `  a bot searching only [${half}, ${maxNumber}]: solved ${halfway.solved} of ${solves}, ` +
      `${perBought(halfway.cpu)} ms CPU (${perBought(halfway.attempts)} attempts) per solution it got: ` +
      `${((halfway.cpu / Math.max(1, halfway.solved) / perSolveCpu) * 100).toFixed(0)} % of the widget's cost per solution`,
  );
  await measureIssuing(check, { requests: Number(values.requests ?? 2000), rounds: Number(values.rounds ?? 5) });
  if (values.browser) await measureInBrowser(check, Number(values['cpu-slowdown'] ?? 4));
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
