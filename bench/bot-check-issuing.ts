// What the API pays to answer GET /v1/bot-check/challenge, beside GET /healthz in the same run: the
// app as api/app.ts builds it (access log, metrics, the routers) in this process, driven over
// keep-alive HTTP by a client in a child process, so the process's CPU time divided by the requests
// answered is the server's cost alone. Issued challenges go through a limit set too high to refuse
// (the limiter's own cost included); refused ones through a limit of one a second; a 404 beside them
// is what any problem answer costs.
import { spawn } from 'node:child_process';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import pino from 'pino';
import { createApp } from '../api/app';
import { BotCheck } from '../api/bot-check';
import type { ApiDeps } from '../api/deps';
import { createMetrics } from '../api/metrics';
import { createRateLimits, type RateLimitConfig } from '../api/rate-limits';
import { Lifecycle } from '../api/shutdown';
import { createLogger } from '../config/log';
import type { Db } from '../store/db';
import type { Gate } from '../store/gate';

/** The client: `count` GETs of `url`, `sockets` at a time, on keep-alive; prints the statuses it got. */
const CLIENT = `
const http = require('node:http');
const [url, count, sockets] = [process.argv[1], Number(process.argv[2]), Number(process.argv[3])];
const agent = new http.Agent({ keepAlive: true, maxSockets: sockets });
const statuses = {};
let next = 0;
const one = () => new Promise((resolve, reject) => {
  http.get(url, { agent }, (res) => {
    statuses[res.statusCode] = (statuses[res.statusCode] || 0) + 1;
    res.resume().on('end', resolve);
  }).on('error', reject);
});
const lane = async () => { while (next++ < count) await one(); };
Promise.all(Array.from({ length: sockets }, lane)).then(() => {
  console.log(JSON.stringify(statuses));
  agent.destroy();
});
`;

function drive(url: string, count: number, sockets: number): Promise<Record<string, number>> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['-e', CLIENT, url, String(count), String(sockets)], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString()));
    child.on('error', reject);
    child.on('exit', (code) =>
      code === 0 ? resolve(JSON.parse(out) as Record<string, number>) : reject(new Error(`client exited ${code}`)),
    );
  });
}

/** The app with what these two routes use; the rest is absent (neither route reaches Postgres or Temporal). */
function serve(botCheck: BotCheck, limits: RateLimitConfig): Promise<Server> {
  const unused = new Proxy({}, { get: () => undefined }) as Db & Gate;
  const deps = {
    botCheck,
    rateLimits: createRateLimits(limits),
    lifecycle: new Lifecycle(),
    // As in production: one JSON line per request at info (probes at debug), written out.
    logger: createLogger('api', { LOG_LEVEL: 'info' }, pino.destination({ dest: '/dev/null', sync: true })),
    metrics: createMetrics(unused, unused),
  } as Partial<ApiDeps> as ApiDeps;
  const server = createApp(deps).listen(0, '127.0.0.1');
  return new Promise((resolve) => server.once('listening', () => resolve(server)));
}

const NO_LIMITS = { perBuyerPerMinute: 0, perIpPerSecond: 0, pagesPerIpPerSecond: 0 };

/** Prints CPU per request (median of the rounds, and their range) for each case. */
export async function measureIssuing(botCheck: BotCheck, o: { requests: number; rounds: number }): Promise<void> {
  const open = await serve(botCheck, { ...NO_LIMITS, challengesPerIpPerSecond: 1_000_000_000 });
  const tight = await serve(botCheck, { ...NO_LIMITS, challengesPerIpPerSecond: 1 });
  const base = (s: Server) => `http://127.0.0.1:${(s.address() as AddressInfo).port}`;
  const cases = [
    { name: 'GET /healthz', url: `${base(open)}/healthz` },
    { name: 'GET /v1/bot-check/challenge, issued', url: `${base(open)}/v1/bot-check/challenge` },
    { name: 'GET /v1/bot-check/challenge, over the limit', url: `${base(tight)}/v1/bot-check/challenge` },
    // Any problem answer (a 404 here) is the floor of what an unauthenticated client can make us do.
    { name: 'GET /v1/no-such-route (404)', url: `${base(open)}/v1/no-such-route` },
  ];
  const perRequest = new Map<string, number[]>(cases.map((c) => [c.name, []]));
  const answers = new Map<string, Record<string, number>>();
  try {
    // Warm-up (JIT, the first derivations), not counted.
    for (const c of cases) await drive(c.url, 500, 8);
    // Rounds interleaved, so a machine that gets busier part-way weighs on every case alike.
    for (let round = 0; round < o.rounds; round++) {
      for (const c of cases) {
        const c0 = process.cpuUsage();
        const statuses = await drive(c.url, o.requests, 8);
        const u = process.cpuUsage(c0);
        perRequest.get(c.name)!.push((u.user + u.system) / 1000 / o.requests);
        const seen = answers.get(c.name) ?? {};
        for (const [status, n] of Object.entries(statuses)) seen[status] = (seen[status] ?? 0) + n;
        answers.set(c.name, seen);
      }
    }
  } finally {
    open.close();
    tight.close();
  }
  console.log(
    `  server CPU per request (${o.rounds} rounds of ${o.requests}, 8 keep-alive connections, median [range]):`,
  );
  for (const c of cases) {
    const ms = perRequest.get(c.name)!.sort((a, b) => a - b);
    const statuses = Object.entries(answers.get(c.name) ?? {})
      .map(([s, n]) => `${n} x ${s}`)
      .join(', ');
    console.log(
      `    ${c.name.padEnd(46)} ${ms[Math.floor(ms.length / 2)].toFixed(2)} ms [${ms[0].toFixed(2)}-${ms[ms.length - 1].toFixed(2)}] (${statuses})`,
    );
  }
}
