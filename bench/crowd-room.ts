import { BUYER_COOKIE } from '../api/buyer-session';
import { cpuSeconds, linePhase } from './crowd-line';
import { countBy, fmt, latencies, type Drive, type Phase } from './crowd-report';
import { parseJson, type HttpClient } from './http-client';

/** Buyers in each room of the line phase: at 50 a second, 30 s lets about half of them in. */
const LINE_BUYERS = 3000;

/**
 * `npm run bench:room` (bench/crowd.ts --room): the waiting room's two buyer routes under the crowd,
 * beside the bare GET /healthz of the same API in the same run. N buyers join one room (POST
 * /v1/products/:sku/queue, one ticket row each), then N polls of their tickets (GET /v1/queue/:ticket,
 * answered from the signed ticket and the API's cached serving counter). The room is paused, so every
 * poll is of a waiting ticket: the steady state of a drop. Target: polls at >= 0.5x the bare route.
 * Then N renders of the queue page (GET /queue/:ticket with the buyer's cookie: what a browser fetches
 * when its poll brings news, or reloads without JavaScript; it reads the ticket's row).
 * Then the line (bench/crowd-line.ts): how often buyers poll, and notice their turn, by either rule.
 */
export async function roomBench(o: {
  client: HttpClient;
  admin: Record<string, string>;
  sku: string;
  tokens: string[];
  concurrency: number;
  healthz: Phase;
  /** The API's process, when the run started it: CPU per phase. */
  apiPid?: number;
  drive: Drive;
}): Promise<number> {
  const { client, sku, tokens } = o;
  const created = await client.json('POST', '/v1/products', o.admin, {
    sku,
    name: `bench room ${sku}`,
    priceCents: 12_900,
    currency: 'eur',
    stock: 600,
    waitingRoom: { admitPerSecond: 100, maxActive: 50 },
  });
  if (created.status !== 201)
    throw new Error(`POST /v1/products ${sku}: ${created.status} ${JSON.stringify(created.body)}`);
  const paused = await client.json('PATCH', `/v1/products/${sku}/waiting-room`, o.admin, { state: 'paused' });
  if (paused.status !== 200) throw new Error(`PATCH waiting-room: ${paused.status} ${JSON.stringify(paused.body)}`);

  const tickets: string[] = tokens.map(() => '');
  console.error(`room: ${tokens.length} buyers join ${sku}, ${o.concurrency} in flight...`);
  const cpu = [cpuSeconds(o.apiPid)];
  const joins = await o.drive('joins: POST /v1/products/:sku/queue', tokens.length, o.concurrency, async (n) => {
    const r = await client.send('POST', `/v1/products/${sku}/queue`, { authorization: `Bearer ${tokens[n]}` });
    const body = parseJson(r.body);
    if (r.status !== 201 || typeof body.ticket !== 'string') return { cls: `${r.status} ${String(body.type)}` };
    tickets[n] = body.ticket;
    return { cls: 'ok' };
  });
  cpu.push(cpuSeconds(o.apiPid));
  const known = tickets.filter(Boolean);
  const owners = tokens.filter((_, n) => tickets[n]);
  if (known.length === 0) throw new Error('no buyer got a ticket');
  console.error(`room: ${tokens.length} polls of those tickets, ${o.concurrency} in flight...`);
  const polls = await o.drive('polls: GET /v1/queue/:ticket', tokens.length, o.concurrency, async (n) => {
    const r = await client.send('GET', `/v1/queue/${known[n % known.length]}`);
    const state = parseJson(r.body).state;
    return { cls: r.status === 200 && state === 'waiting' ? 'ok' : `${r.status} ${String(state)}` };
  });
  cpu.push(cpuSeconds(o.apiPid));
  console.error(`room: ${tokens.length} renders of the queue page, ${o.concurrency} in flight...`);
  const pages = await o.drive('pages: GET /queue/:ticket', tokens.length, o.concurrency, async (n) => {
    const i = n % known.length;
    const r = await client.send('GET', `/queue/${known[i]}`, { cookie: `${BUYER_COOKIE}=${owners[i]}` });
    return { cls: r.status === 200 && r.body.includes('data-poll') ? 'ok' : `${r.status}` };
  });
  cpu.push(cpuSeconds(o.apiPid));
  // API CPU per answer of a phase (ms), when this run started the API.
  const cpuMs = (i: number, p: Phase) =>
    cpu[i] !== undefined && cpu[i + 1] !== undefined ? ((cpu[i + 1]! - cpu[i]) * 1000) / p.answers.length : NaN;

  const rate = (p: Phase) => p.answers.length / p.seconds;
  const line = (p: Phase) => {
    const l = latencies(p.answers);
    const other = [...countBy(p.answers, (a) => a.cls)].filter(([k]) => k !== 'ok');
    return `${p.name.padEnd(38)} ${fmt(rate(p)).padStart(7)}/s  ${fmt(rate(p) / rate(o.healthz), 2).padStart(5)}x  p50 ${fmt(l.p50, 1)} ms  p99 ${fmt(l.p99, 1)} ms${other.length ? `  (${other.map(([k, v]) => `${k}: ${v}`).join(', ')})` : ''}`;
  };
  console.log(`\nwaiting room, ${tokens.length} buyers, ${o.concurrency} in flight (rate, and x the bare route)`);
  console.log(line({ ...o.healthz, name: 'baseline: GET /healthz' }));
  console.log(`${line(joins)}  API CPU ${fmt(cpuMs(0, joins), 2)} ms each`);
  console.log(`${line(polls)}  API CPU ${fmt(cpuMs(1, polls), 2)} ms each`);
  console.log(`${line(pages)}  API CPU ${fmt(cpuMs(2, pages), 2)} ms each`);
  const ok = rate(polls) >= 0.5 * rate(o.healthz);
  console.log(`polls at >= 0.5x the bare route: ${ok ? 'yes' : 'NO'}`);
  await linePhase({ ...o, tokens: o.tokens.slice(0, LINE_BUYERS) });
  const failed = [...joins.answers, ...polls.answers, ...pages.answers].filter((a) => a.cls !== 'ok').length;
  return failed === 0 ? 0 : 1;
}
