import { randomUUID } from 'node:crypto';
import http from 'node:http';
import test from 'ava';
import { asBuyer, startSystem, type System } from '../helpers/system';

// Rate limits on POST /v1/purchases: per buyer and per client IP, 429 with Retry-After beyond them,
// and nothing written for a refused request; and on GET /v1/bot-check/challenge, per client IP.

const CHALLENGES_PER_SECOND = 4;

let sys: System;
test.before(async () => {
  sys = await startSystem({
    worker: false,
    rateLimits: { perBuyerPerMinute: 3, perIpPerSecond: 8, challengesPerIpPerSecond: CHALLENGES_PER_SECOND },
  });
});
test.after.always(async () => {
  await sys?.close();
});

test.serial('a buyer beyond the per-buyer limit gets 429 with Retry-After and nothing is written', async (t) => {
  const auth = await asBuyer('rate-eve');
  const post = () =>
    sys.api('POST', '/v1/purchases', { sku: 'no-such-sku' }, { ...auth, 'idempotency-key': randomUUID() });
  const first = [await post(), await post(), await post()];
  t.deepEqual(
    first.map((r) => r.status),
    [404, 404, 404],
  );
  const limited = await post();
  t.is(limited.status, 429);
  t.is(limited.body.type, 'rate-limited');
  t.regex(limited.headers.get('retry-after') ?? '', /^\d+$/);
  const { rows } = await sys.db.query(`SELECT count(*)::int AS n FROM purchases WHERE buyer_id = 'rate-eve'`);
  t.is(rows[0].n, 0);
});

test.serial('one address beyond the per-IP limit gets 429, whatever buyers it plays', async (t) => {
  await new Promise((r) => setTimeout(r, 1100)); // a fresh second for this address
  const buyers = await Promise.all(Array.from({ length: 12 }, (_, n) => asBuyer(`rate-bot-${n}`)));
  const answers = await Promise.all(
    buyers.map((auth) =>
      sys.api('POST', '/v1/purchases', { sku: 'no-such-sku' }, { ...auth, 'idempotency-key': randomUUID() }),
    ),
  );
  const limited = answers.filter((a) => a.status === 429);
  // 8 a second: 4 of the 12 are refused (fewer only if the burst straddled a window on a loaded machine).
  t.true(limited.length >= 1 && limited.length <= 4, `${limited.length} limited`);
  t.true(limited.every((a) => a.body.type === 'rate-limited' && a.headers.get('retry-after') !== null));
  t.is(answers.filter((a) => a.status === 404).length, 12 - limited.length);
});

/** GET a challenge from the local address `from` (any of 127.0.0.0/8): the API sees a client of that address. */
function challengeFrom(from: string): Promise<{ status: number; headers: http.IncomingHttpHeaders; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.get(`${sys.apiUrl}/v1/bot-check/challenge`, { localAddress: from, agent: false }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
    });
    req.on('error', reject);
  });
}

test.serial(
  'one address asking for challenges beyond its limit gets 429 problems, another address its challenge',
  async (t) => {
    // Forty at once against four a second: none refused only if the burst took ten seconds or more.
    const burst = await Promise.all(
      Array.from({ length: 10 * CHALLENGES_PER_SECOND }, () => challengeFrom('127.0.6.1')),
    );
    const limited = burst.filter((r) => r.status === 429);
    t.true(limited.length > 0, 'some were refused');
    t.is(burst.filter((r) => r.status === 200).length, burst.length - limited.length, 'the rest were answered');
    for (const r of limited) {
      t.regex(r.headers['content-type'] ?? '', /^application\/problem\+json/);
      t.regex(r.headers['retry-after'] ?? '', /^[1-9]\d*$/);
      t.like(JSON.parse(r.body), { type: 'rate-limited', status: 429 });
    }
    const other = await challengeFrom('127.0.6.2');
    t.is(other.status, 200, other.body);
    t.truthy((JSON.parse(other.body) as { signature?: string }).signature);
  },
);
