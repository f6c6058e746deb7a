import { randomUUID } from 'node:crypto';
import test from 'ava';
import { SignJWT, UnsecuredJWT } from 'jose';
import { signBuyerToken } from '../../config/buyer-tokens';
import { assertInvariants } from '../helpers/db';
import { AS_SUPPORT, asBuyer, BUYER_TOKEN_SECRET, startSystem, type System } from '../helpers/system';

// Buyers are who their token says: a string in the body is not an identity, and a buyer's purchases
// answer that buyer (and support) only.

let sys: System;
test.before(async () => {
  sys = await startSystem();
});
test.after.always(async () => {
  await sys?.close();
});

/** Rows of `sku`'s purchases and holds: the SKU is the test's own (other files write beside it). */
async function counts(sku: string) {
  const { rows } = await sys.db.query(
    `SELECT (SELECT count(*)::int FROM purchases WHERE sku = $1) AS purchases,
            (SELECT count(*)::int FROM holds WHERE sku = $1) AS holds`,
    [sku],
  );
  return rows[0] as { purchases: number; holds: number };
}

test('the griefing sequence fails: a stranger cannot learn, read or cancel a buyer hold', async (t) => {
  const sku = await sys.createProduct({ stock: 2 });
  const victim = await sys.buy(sku, 'victim');
  t.is(victim.status, 201);
  const id = victim.body.purchaseId as string;
  const attacker = await asBuyer('attacker');

  // Posing as the victim in the body: refused, and no heldBy is told.
  const posing = await sys.api(
    'POST',
    '/v1/purchases',
    { sku, buyerId: 'victim' },
    {
      ...attacker,
      'idempotency-key': randomUUID(),
    },
  );
  t.is(posing.status, 403);
  t.is(posing.body.type, 'forbidden');
  t.is(posing.body.heldBy, undefined);

  for (const headers of [attacker, {}]) {
    const cancel = await sys.api('POST', `/v1/purchases/${id}/cancel`, undefined, headers);
    t.is(cancel.status, 'authorization' in headers ? 404 : 401, JSON.stringify(cancel.body));
    t.is(cancel.headers.get('content-type'), 'application/problem+json');
    const read = await sys.api('GET', `/v1/purchases/${id}`, undefined, headers);
    t.is(read.status, 'authorization' in headers ? 404 : 401);
  }
  // Not a hint that it exists: the same answer as for a purchase that never was.
  const never = await sys.api('GET', '/v1/purchases/pur_000000000000000000000000', undefined, attacker);
  const stranger = await sys.api('GET', `/v1/purchases/${id}`, undefined, attacker);
  t.is(never.status, stranger.status);
  t.is(never.body.type, stranger.body.type);

  t.like((await sys.purchase(id)).body, { status: 'awaiting_payment', buyerId: 'victim' });
  t.like((await sys.api('GET', `/v1/purchases/${id}`, undefined, await asBuyer('victim'))).body, {
    status: 'awaiting_payment',
  });
  t.like((await sys.api('GET', `/v1/purchases/${id}`, undefined, AS_SUPPORT)).body, { purchaseId: id });
  // The victim's own cancel works.
  const own = await sys.api('POST', `/v1/purchases/${id}/cancel`, undefined, await asBuyer('victim'));
  t.is(own.status, 200);
  t.is(own.body.status, 'expired');
  await assertInvariants(t, sys.db, sku);
});

test('a buyer sees heldBy for their own hold, and the same Idempotency-Key of two buyers are two purchases', async (t) => {
  const sku = await sys.createProduct({ stock: 3 });
  const key = randomUUID();
  const first = await sys.buy(sku, 'uma', {}, key);
  const again = await sys.buy(sku, 'uma');
  t.is(again.status, 409);
  t.is(again.body.heldBy, first.body.purchaseId);
  const other = await sys.buy(sku, 'vic', {}, key);
  t.is(other.status, 201);
  t.not(other.body.purchaseId, first.body.purchaseId);
  t.is((await sys.purchase(other.body.purchaseId)).body.buyerId, 'vic');
  await assertInvariants(t, sys.db, sku);
});

test.serial('300 requests with made-up buyer ids and no valid token are all 401 and write nothing', async (t) => {
  const sku = await sys.createProduct({ stock: 5 });
  const before = await counts(sku);
  const now = Math.floor(Date.now() / 1000);
  const wrongSecret = (sub: string) => signBuyerToken('another-secret-that-is-long-enough-0123', sub);
  const expired = (sub: string) =>
    new SignJWT({})
      .setProtectedHeader({ alg: 'HS256' })
      .setSubject(sub)
      .setExpirationTime(now - 60)
      .sign(new TextEncoder().encode(BUYER_TOKEN_SECRET));
  const noExp = (sub: string) =>
    new SignJWT({})
      .setProtectedHeader({ alg: 'HS256' })
      .setSubject(sub)
      .sign(new TextEncoder().encode(BUYER_TOKEN_SECRET));
  const unsigned = (sub: string) =>
    Promise.resolve(new UnsecuredJWT({}).setSubject(sub).setExpirationTime('1h').encode());
  const kinds: ((sub: string) => Promise<string | null>)[] = [
    () => Promise.resolve(null),
    wrongSecret,
    expired,
    noExp,
    unsigned,
    (sub) => Promise.resolve(`not-a-jwt-${sub}`),
  ];
  const answers = await Promise.all(
    Array.from({ length: 300 }, async (_, n) => {
      const sub = `bot-${n}-${randomUUID()}`;
      const token = await kinds[n % kinds.length](sub);
      const headers: Record<string, string> = { 'idempotency-key': randomUUID() };
      if (token) headers.authorization = `Bearer ${token}`;
      return sys.api('POST', '/v1/purchases', { sku, buyerId: sub }, headers);
    }),
  );
  const statuses = new Map<number, number>();
  for (const a of answers) statuses.set(a.status, (statuses.get(a.status) ?? 0) + 1);
  t.deepEqual([...statuses], [[401, 300]]);
  t.true(answers.every((a) => a.body.type === 'unauthorized'));
  t.deepEqual(await counts(sku), before);
  t.deepEqual(before, { purchases: 0, holds: 0 });
  t.like((await sys.api('GET', `/v1/products/${sku}`)).body, { available: 5, held: 0 });
});

test('a signed token whose sub is a number, an object or empty is 401 naming the sub, and writes nothing', async (t) => {
  const sku = await sys.createProduct({ stock: 1 });
  const secret = new TextEncoder().encode(BUYER_TOKEN_SECRET);
  const exp = Math.floor(Date.now() / 1000) + 600;
  for (const sub of [12345, { id: 'x' }, '', true]) {
    // jose's setSubject takes a string only: the claim is written as a merchant's faulty login would.
    const token = await new SignJWT({ sub, exp } as unknown as Record<string, unknown>)
      .setProtectedHeader({ alg: 'HS256' })
      .sign(secret);
    const answer = await sys.api(
      'POST',
      '/v1/purchases',
      { sku },
      { authorization: `Bearer ${token}`, 'idempotency-key': randomUUID() },
    );
    t.is(answer.status, 401, `sub ${JSON.stringify(sub)}: ${JSON.stringify(answer.body)}`);
    t.is(answer.body.type, 'unauthorized');
    t.regex(answer.body.detail as string, /sub/);
  }
  t.deepEqual(await counts(sku), { purchases: 0, holds: 0 });
  await assertInvariants(t, sys.db, sku);
});
