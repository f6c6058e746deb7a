import fs from 'node:fs';
import { pollDelayMs } from '../drill/room';
import { fmt, type Drive } from './crowd-report';
import { parseJson, type HttpClient } from './http-client';

// bench:room's line phase: how often a crowd in line polls, and how late it notices its turn, when
// it follows the answers (`nextPollSeconds`) and when it polls after half the estimate (1 to 10 s,
// the queue page's rule before issue 35), in two rooms opened together at one pace in one run.

const LINE_SECONDS = Number(process.env.BENCH_LINE_SECONDS ?? 30);
const LINE_RATE = 50;
const SESSION_SECONDS = 600;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** CPU-seconds (user + system) the process `pid` has used, from /proc; undefined where there is none. */
export function cpuSeconds(pid: number | undefined): number | undefined {
  if (pid === undefined) return undefined;
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(f[11]) + Number(f[12])) / 100; // clock ticks: 100 a second on Linux
  } catch {
    return undefined;
  }
}

interface LineResult {
  polls: number[];
  lagsMs: number[];
}

/** One buyer of the line: polls until let in, turned away, or the phase's end. */
async function follow(client: HttpClient, ticket: string, told: boolean, end: number, r: LineResult): Promise<void> {
  let polls = 0;
  for (;;) {
    const res = await client.send('GET', `/v1/queue/${ticket}`).catch(() => ({ status: 0, body: '{}' }));
    polls++;
    const body = parseJson(res.body);
    if (body.state === 'admitted' && typeof body.admissionExpiresAt === 'string') {
      r.lagsMs.push(Date.now() - (Date.parse(body.admissionExpiresAt) - SESSION_SECONDS * 1000));
      break;
    }
    const left = end - Date.now();
    if ((res.status === 200 && body.state !== 'waiting') || left <= 0) break;
    const delay = told
      ? pollDelayMs(body, Math.random)
      : pollDelayMs({ ...body, nextPollSeconds: undefined }, Math.random);
    await sleep(Math.min(delay, left));
  }
  r.polls.push(polls);
}

const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] : NaN;
};

/**
 * Two rooms, one after the other, of all the buyers each: paused while they join, then opened at
 * LINE_RATE a second; for LINE_SECONDS each buyer polls as the room's rule says. Prints polls per
 * buyer and per buyer-minute, how late the admitted noticed their turn, and the API's CPU, per rule.
 */
export async function linePhase(o: {
  client: HttpClient;
  admin: Record<string, string>;
  sku: string;
  tokens: string[];
  concurrency: number;
  apiPid?: number;
  drive: Drive;
}): Promise<void> {
  const rules = [
    { name: 'as told (nextPollSeconds)', told: true, sku: `${o.sku}-told` },
    { name: 'half the estimate, 1-10 s', told: false, sku: `${o.sku}-half` },
  ];
  const lines: string[] = [];
  for (const rule of rules) {
    const created = await o.client.json('POST', '/v1/products', o.admin, {
      sku: rule.sku,
      name: `bench line ${rule.sku}`,
      priceCents: 100,
      currency: 'eur',
      stock: 1_000_000,
      waitingRoom: { admitPerSecond: LINE_RATE, maxActive: 1_000_000, sessionSeconds: SESSION_SECONDS },
    });
    if (created.status !== 201) throw new Error(`POST /v1/products ${rule.sku}: ${created.status}`);
    await o.client.json('PATCH', `/v1/products/${rule.sku}/waiting-room`, o.admin, { state: 'paused' });
    const tickets: string[] = [];
    await o.drive(`line joins ${rule.sku}`, o.tokens.length, o.concurrency, async (n) => {
      const r = await o.client.send('POST', `/v1/products/${rule.sku}/queue`, {
        authorization: `Bearer ${o.tokens[n]}`,
      });
      const ticket = parseJson(r.body).ticket;
      if (typeof ticket === 'string') tickets.push(ticket);
      return { cls: r.status === 201 ? 'ok' : String(r.status) };
    });
    console.error(`line: ${tickets.length} buyers polling ${rule.name}, ${LINE_SECONDS} s at ${LINE_RATE}/s...`);
    await o.client.json('PATCH', `/v1/products/${rule.sku}/waiting-room`, o.admin, { state: 'open' });
    const cpu0 = cpuSeconds(o.apiPid);
    const end = Date.now() + LINE_SECONDS * 1000;
    const r: LineResult = { polls: [], lagsMs: [] };
    await Promise.all(tickets.map((t) => follow(o.client, t, rule.told, end, r)));
    const cpu = cpuSeconds(o.apiPid);
    const polls = r.polls.reduce((a, b) => a + b, 0);
    const perBuyer = polls / Math.max(1, r.polls.length);
    lines.push(
      `${rule.name.padEnd(26)} polls ${String(polls).padStart(7)}  ${fmt(perBuyer, 1).padStart(5)} per buyer  ` +
        `${fmt(perBuyer / (LINE_SECONDS / 60), 1).padStart(5)} per buyer-minute  let in ${r.lagsMs.length}, ` +
        `noticed after p50 ${fmt(pct(r.lagsMs, 50) / 1000, 1)} s p99 ${fmt(pct(r.lagsMs, 99) / 1000, 1)} s` +
        (cpu0 !== undefined && cpu !== undefined ? `  API CPU ${fmt(cpu - cpu0, 1)} s` : ''),
    );
  }
  console.log(
    `\nthe line: ${o.tokens.length} buyers let in at ${LINE_RATE}/s for ${LINE_SECONDS} s, each rule in a room of its own`,
  );
  for (const l of lines) console.log(l);
}
