import { randomUUID } from 'node:crypto';
import test from 'ava';
import { asBuyer, startSystem, type System } from '../helpers/system';

// Rate limits on POST /v1/purchases: per buyer and per client IP, 429 with Retry-After beyond them,
// and nothing written for a refused request.

let sys: System;
test.before(async () => {
  sys = await startSystem({ worker: false, rateLimits: { perBuyerPerMinute: 3, perIpPerSecond: 8 } });
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
