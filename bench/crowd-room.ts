import { countBy, fmt, latencies, type Answer, type Phase } from './crowd-report';
import { parseJson, type HttpClient } from './http-client';

/**
 * `npm run bench:room` (bench/crowd.ts --room): the waiting room's two buyer routes under the crowd,
 * beside the bare GET /healthz of the same API in the same run. N buyers join one room (POST
 * /v1/products/:sku/queue, one ticket row each), then N polls of their tickets (GET /v1/queue/:ticket,
 * answered from the signed ticket and the API's cached serving counter). The room is paused, so every
 * poll is of a waiting ticket: the steady state of a drop. Target: polls at >= 0.5x the bare route.
 */
export async function roomBench(o: {
  client: HttpClient;
  admin: Record<string, string>;
  sku: string;
  tokens: string[];
  concurrency: number;
  healthz: Phase;
  drive: (
    name: string,
    count: number,
    concurrency: number,
    once: (n: number) => Promise<Omit<Answer, 'ms'>>,
  ) => Promise<Phase>;
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
  const joins = await o.drive('joins: POST /v1/products/:sku/queue', tokens.length, o.concurrency, async (n) => {
    const r = await client.send('POST', `/v1/products/${sku}/queue`, { authorization: `Bearer ${tokens[n]}` });
    const body = parseJson(r.body);
    if (r.status !== 201 || typeof body.ticket !== 'string') return { cls: `${r.status} ${String(body.type)}` };
    tickets[n] = body.ticket;
    return { cls: 'ok' };
  });
  const known = tickets.filter(Boolean);
  if (known.length === 0) throw new Error('no buyer got a ticket');
  console.error(`room: ${tokens.length} polls of those tickets, ${o.concurrency} in flight...`);
  const polls = await o.drive('polls: GET /v1/queue/:ticket', tokens.length, o.concurrency, async (n) => {
    const r = await client.send('GET', `/v1/queue/${known[n % known.length]}`);
    const state = parseJson(r.body).state;
    return { cls: r.status === 200 && state === 'waiting' ? 'ok' : `${r.status} ${String(state)}` };
  });

  const rate = (p: Phase) => p.answers.length / p.seconds;
  const line = (p: Phase) => {
    const l = latencies(p.answers);
    const other = [...countBy(p.answers, (a) => a.cls)].filter(([k]) => k !== 'ok');
    return `${p.name.padEnd(38)} ${fmt(rate(p)).padStart(7)}/s  ${fmt(rate(p) / rate(o.healthz), 2).padStart(5)}x  p50 ${fmt(l.p50, 1)} ms  p99 ${fmt(l.p99, 1)} ms${other.length ? `  (${other.map(([k, v]) => `${k}: ${v}`).join(', ')})` : ''}`;
  };
  console.log(`\nwaiting room, ${tokens.length} buyers, ${o.concurrency} in flight (rate, and x the bare route)`);
  console.log(line({ ...o.healthz, name: 'baseline: GET /healthz' }));
  console.log(line(joins));
  console.log(line(polls));
  const ok = rate(polls) >= 0.5 * rate(o.healthz);
  console.log(`polls at >= 0.5x the bare route: ${ok ? 'yes' : 'NO'}`);
  const failed = [...joins.answers, ...polls.answers].filter((a) => a.cls !== 'ok').length;
  return failed === 0 ? 0 : 1;
}
