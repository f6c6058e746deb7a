import { randomUUID } from 'node:crypto';
import http from 'node:http';
import test from 'ava';
import { createLogger } from '../../config/log';
import { captured } from '../helpers/log-lines';
import { asBuyer, startSystem, type System } from '../helpers/system';

// The per-address limits behind a balancer (TRUSTED_PROXIES): the test plays the balancer from
// 127.0.0.1, the one trusted address, writing X-Forwarded-For as HAProxy does, and plays clients
// that reach the API directly from other loopback addresses (all of 127.0.0.0/8 is this machine's).

const LIMIT = 3;
/** Ten times the limit at once: none refused only if the burst took ten seconds or more. */
const BURST = 10 * LIMIT;
const BALANCER = '127.0.0.1';

let sys: System;
let auth: Record<string, string>;
const log = captured();
test.before(async () => {
  sys = await startSystem({
    worker: false,
    rateLimits: { perBuyerPerMinute: 0, perIpPerSecond: LIMIT, pagesPerIpPerSecond: LIMIT },
    trustedProxies: [BALANCER],
    logger: createLogger('api', { LOG_LEVEL: 'info' }, log.stream),
  });
  auth = await asBuyer('proxied-buyer');
});
test.after.always(async () => {
  await sys?.close();
});

interface Answer {
  status: number;
  type?: string;
  requestId: string;
}

/** One request from the local address `from`, on a connection of its own. */
function send(from: string, method: string, path: string, headers: Record<string, string>, body?: unknown) {
  return new Promise<Answer>((resolve, reject) => {
    const payload = body === undefined ? undefined : JSON.stringify(body);
    const req = http.request(
      `${sys.apiUrl}${path}`,
      {
        method,
        localAddress: from,
        agent: false,
        headers: { ...headers, ...(payload ? { 'content-type': 'application/json' } : {}) },
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (text += c));
        res.on('end', () => {
          let type: string | undefined;
          try {
            type = (JSON.parse(text) as { type?: string }).type;
          } catch {
            // a page, not a problem
          }
          resolve({ status: res.statusCode ?? 0, type, requestId: String(res.headers['x-request-id']) });
        });
      },
    );
    req.on('error', reject);
    req.end(payload);
  });
}

/** A purchase of a SKU that does not exist: 404 once past the limits, nothing written. */
const purchase = (from: string, forwardedFor?: string) =>
  send(
    from,
    'POST',
    '/v1/purchases',
    { ...auth, 'idempotency-key': randomUUID(), ...(forwardedFor ? { 'x-forwarded-for': forwardedFor } : {}) },
    { sku: 'no-such-sku' },
  );

const page = (from: string, forwardedFor?: string) =>
  send(from, 'GET', '/', forwardedFor ? { 'x-forwarded-for': forwardedFor } : {});

const burst = (n: number, one: (i: number) => Promise<Answer>) =>
  Promise.all(Array.from({ length: n }, (_, i) => one(i)));
const limited = (answers: Answer[]) => answers.filter((a) => a.status === 429);

test('behind the trusted balancer one abusive client is limited and the others it forwards are served', async (t) => {
  const [abusive, ...others] = await Promise.all([
    burst(BURST, () => purchase(BALANCER, '198.51.100.7')),
    // No more than the limit each: they cannot be refused whatever the timing.
    ...['198.51.100.8', '198.51.100.9', '2001:db8::9'].map((client) => burst(LIMIT, () => purchase(BALANCER, client))),
  ]);
  t.true(limited(abusive).length > 0, 'the abusive client was limited');
  t.true(limited(abusive).every((a) => a.type?.endsWith('rate-limited')));
  t.is(abusive.filter((a) => a.status === 404).length, BURST - limited(abusive).length, 'the rest were answered');
  for (const answers of others)
    t.deepEqual(
      answers.map((a) => a.status),
      Array(LIMIT).fill(404),
      'each other client was served',
    );
  // The access log names the client, not the balancer.
  const logged = log.lines.find((l) => l.msg === 'request' && l.requestId === abusive[0].requestId);
  t.is(logged?.ip, '198.51.100.7');
});

test('a client behind the balancer that writes addresses of its own into X-Forwarded-For is still limited by its address', async (t) => {
  // HAProxy appends the address it saw; everything left of it is the client's own writing.
  const answers = await burst(BURST, (i) => purchase(BALANCER, `203.0.113.${i}, 198.51.100.20`));
  t.true(limited(answers).length > 0, 'limited as 198.51.100.20 whatever it prepended');
  const logged = log.lines.find((l) => l.msg === 'request' && l.requestId === answers[0].requestId);
  t.is(logged?.ip, '198.51.100.20');
});

test('a client that reaches the API directly is limited by its own address, whatever X-Forwarded-For it sends', async (t) => {
  const direct = '127.0.7.2';
  const purchases = await burst(BURST, (i) => purchase(direct, `198.51.100.${100 + i}`));
  t.true(limited(purchases).length > 0, 'a fresh X-Forwarded-For on each request does not make a fresh client');
  const logged = log.lines.find((l) => l.msg === 'request' && l.requestId === purchases[0].requestId);
  t.is(logged?.ip, direct);
  // Nor can it pass for the balancer's clients: one of theirs is still served.
  t.is((await purchase(BALANCER, '198.51.100.40')).status, 404);
  const pages = await burst(BURST, (i) => page('127.0.7.3', `198.51.100.${100 + i}`));
  t.true(limited(pages).length > 0, 'the page limit reads the same address');
});

test('the page limit behind the balancer: one client refused, another served', async (t) => {
  const [abusive, other] = await Promise.all([
    burst(BURST, () => page(BALANCER, '198.51.100.50')),
    burst(LIMIT, () => page(BALANCER, '198.51.100.51')),
  ]);
  t.true(limited(abusive).length > 0);
  t.deepEqual(
    other.map((a) => a.status),
    Array(LIMIT).fill(200),
  );
});
