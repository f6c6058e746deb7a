import test from 'ava';
import Stripe from 'stripe';
import { createStripe } from '../../config/clients';
import { purchaseWorkflowId } from '../../vocabulary';
import { assertInvariants } from '../helpers/db';
import { asBuyer, SESSION_ANSWERS_LOST, sessionOf, startSystem, type System, WEBHOOK_SECRET } from '../helpers/system';

let sys: System;
test.before(async () => {
  sys = await startSystem();
});
test.after.always(async () => {
  await sys?.close();
});

/** The Checkout Sessions the emulator has for a purchase. */
async function sessionsOf(purchaseId: string) {
  const stripe = createStripe({ stripeSecretKey: 'sk_test_emulator', stripeApiUrl: sys.emulator.url });
  const { data } = await stripe.checkout.sessions.list({ limit: 100 });
  return data.filter((s) => s.client_reference_id === purchaseId);
}

async function movements(sku: string): Promise<string[]> {
  const { rows } = await sys.db.query('SELECT kind FROM stock_movements WHERE sku = $1 ORDER BY id', [sku]);
  return rows.map((r) => r.kind);
}

test.serial('events delivered three times each and out of order give one outcome and no double work', async (t) => {
  const sku = await sys.createProduct();
  const res = await sys.buy(sku, 'dup-buyer');
  t.is(res.status, 201);
  const sessionId = await sessionOf(sys.db, res.body.purchaseId);
  await sys.emulatorCall('POST', '/_emulator/webhooks', { duplicate: 3, shuffle: true, pause: true });
  let ours: any[] = [];
  try {
    // completed (unpaid) then async_payment_succeeded, each three times, released in random order.
    await sys.pay(sessionId, 'async_pending');
    await sys.pay(sessionId, 'async_succeeded');
    await sys.emulatorCall('POST', '/_emulator/webhooks', { pause: false });
    await sys.waitForPurchase(res.body.purchaseId, (r) => r.status === 'confirmed');
    // Let every copy arrive before judging.
    const deadline = Date.now() + 15_000;
    for (;;) {
      const { body } = await sys.emulatorCall('GET', '/_emulator/events');
      ours = body.data.filter((e: any) => e.object_id === sessionId);
      const copies = ours.flatMap((e: any) => e.deliveries);
      if (copies.length === 6 && copies.every((d: any) => d.state === 'delivered')) break;
      if (Date.now() > deadline) {
        t.fail(`deliveries not done: ${JSON.stringify(copies)}`);
        break;
      }
      await new Promise((r) => setTimeout(r, 100));
    }
  } finally {
    await sys.emulatorCall('POST', '/_emulator/webhooks', { duplicate: 1, shuffle: false, pause: false });
  }
  // Each event is recorded once, however many copies came. The payment's reached the saga. The
  // completed event (unpaid) reached it too if a copy came before the payment's first copy; after
  // it, the purchase may already be confirmed and the event is then ignored as stale (see
  // test/saga/stale-events.test.ts): which of the two depends on the shuffle and the saga's speed.
  const { rows } = await sys.db.query('SELECT type, status FROM webhook_events WHERE purchase_id = $1 ORDER BY type', [
    res.body.purchaseId,
  ]);
  const firstCopyAt = (type: string) =>
    Math.min(
      ...ours
        .filter((e) => e.type === type)
        .flatMap((e) => e.deliveries.flatMap((d: any) => d.attempts.map((a: any) => Date.parse(a.at)))),
    );
  const completedFirst =
    firstCopyAt('checkout.session.completed') < firstCopyAt('checkout.session.async_payment_succeeded');
  t.deepEqual(
    rows.map((r) => r.type),
    ['checkout.session.async_payment_succeeded', 'checkout.session.completed'],
  );
  t.is(rows[0].status, 'delivered', 'the payment reached the saga');
  if (completedFirst) t.is(rows[1].status, 'delivered', 'the completed event came first: the saga took it');
  else t.true(['delivered', 'ignored'].includes(rows[1].status), `the completed event came later: ${rows[1].status}`);
  t.deepEqual(await movements(sku), ['create', 'hold', 'sell']);
  t.like(await sys.stock(sku), { available: 4, sold: 1, held: 0 });
  t.like((await sys.purchase(res.body.purchaseId)).body, { status: 'confirmed' });
  await assertInvariants(t, sys.db, sku);
});

test.serial(
  'with webhooks stopped, a paid purchase is confirmed when its hold lapses, not refunded (docs/stripe.md)',
  async (t) => {
    // A hold long enough for the pay call just after the 201 (one call to the emulator) to come first.
    const sku = await sys.createProduct({ holdSeconds: 10 });
    await sys.emulatorCall('POST', '/_emulator/webhooks', { pause: true });
    try {
      const res = await sys.buy(sku, 'no-webhooks-buyer');
      t.is(res.status, 201);
      await sys.pay(await sessionOf(sys.db, res.body.purchaseId), 'succeeded');
      // No event reaches the API: the hold's timer closes the session, Stripe says it was paid.
      const done = await sys.waitForPurchase(
        res.body.purchaseId,
        (r) => r.status !== 'holding' && r.status !== 'awaiting_payment',
      );
      t.is(done.status, 'confirmed', JSON.stringify(done));
      t.is(done.refund_id, null);
      const { rows } = await sys.db.query('SELECT count(*)::int AS n FROM webhook_events WHERE purchase_id = $1', [
        res.body.purchaseId,
      ]);
      t.is(rows[0].n, 0, 'no event reached the API');
    } finally {
      await sys.emulatorCall('POST', '/_emulator/webhooks', { pause: false });
    }
  },
);

test('a webhook with a bad signature is refused with 400 and changes nothing', async (t) => {
  const sku = await sys.createProduct();
  const res = await sys.buy(sku, 'forger');
  const sessionId = await sessionOf(sys.db, res.body.purchaseId);
  const event = {
    id: 'evt_forged_1',
    object: 'event',
    api_version: '2024-06-20',
    created: Math.floor(Date.now() / 1000),
    livemode: false,
    type: 'checkout.session.completed',
    data: {
      object: {
        id: sessionId,
        object: 'checkout.session',
        payment_status: 'paid',
        metadata: { purchase_id: res.body.purchaseId },
      },
    },
  };
  const t0 = Math.floor(Date.now() / 1000);
  // Signed with the right secret but dated a year ahead: a signature kept for later replay.
  const ahead = Stripe.webhooks.generateTestHeaderString({
    payload: JSON.stringify(event),
    secret: WEBHOOK_SECRET,
    timestamp: t0 + 365 * 24 * 3600,
  });
  for (const signature of [`t=${t0},v1=${'0'.repeat(64)}`, '', 'garbage', ahead]) {
    const r = await sys.api('POST', '/v1/webhooks/stripe', JSON.stringify(event), {
      'content-type': 'application/json',
      ...(signature ? { 'stripe-signature': signature } : {}),
    });
    t.is(r.status, 400);
    t.is(r.body.type, 'bad-signature');
    t.regex(r.headers.get('content-type') ?? '', /^application\/problem\+json/);
  }
  const { rows } = await sys.db.query('SELECT 1 FROM webhook_events WHERE event_id = $1', ['evt_forged_1']);
  t.is(rows.length, 0);
  t.like((await sys.purchase(res.body.purchaseId)).body, { status: 'awaiting_payment' });
  t.like(await sys.stock(sku), { held: 1, sold: 0 });
});

test.serial('session creation failing twice is retried and opens exactly one session', async (t) => {
  const sku = await sys.createProduct();
  await sys.emulatorCall('POST', '/_emulator/faults', {
    path: '/v1/checkout/sessions',
    method: 'POST',
    status: 500,
    count: 2,
  });
  try {
    const res = await sys.buy(sku, 'retry-buyer');
    t.is(res.status, 201, JSON.stringify(res.body));
    const stripe = createStripe({ stripeSecretKey: 'sk_test_emulator', stripeApiUrl: sys.emulator.url });
    const sessions = (await stripe.checkout.sessions.list({ limit: 100 })).data.filter(
      (s) => s.metadata?.purchase_id === res.body.purchaseId,
    );
    t.is(sessions.length, 1);
    const faults = await sys.emulatorCall('GET', '/_emulator/faults');
    t.deepEqual(faults.body.data ?? faults.body, [], 'both injected failures were used');
  } finally {
    await sys.emulatorCall('DELETE', '/_emulator/faults');
  }
  await assertInvariants(t, sys.db, sku);
});

test.serial('session creation failing for good releases the hold and fails the purchase', async (t) => {
  const sku = await sys.createProduct({ stock: 1 });
  await sys.emulatorCall('POST', '/_emulator/faults', {
    path: '/v1/checkout/sessions',
    method: 'POST',
    status: 500,
    count: 1000,
  });
  let res;
  try {
    res = await sys.buy(sku, 'unlucky');
  } finally {
    await sys.emulatorCall('DELETE', '/_emulator/faults');
  }
  t.is(res.status, 503);
  t.is(res.body.type, 'unavailable');
  t.truthy(res.headers.get('retry-after'));
  t.true(res.body.retryWithNewKey, 'this key is final: the buyer starts again with a new one');
  const p = await sys.waitForPurchase(res.body.purchaseId, (r) => r.status === 'failed');
  t.regex(p.reason, /could not open the Checkout Session/);
  t.deepEqual(await movements(sku), ['create', 'hold', 'release']);
  t.like(await sys.stock(sku), { available: 1, held: 0 });
  // The unit is on sale again at once.
  t.is((await sys.buy(sku, 'next-buyer')).status, 201);
  // The saga ends once it made sure no session of the failed purchase can be paid (any it opened is expired).
  await sys.temporal.workflow.getHandle(purchaseWorkflowId(res.body.purchaseId)).result();
  t.deepEqual(
    (await sessionsOf(res.body.purchaseId)).filter((s) => s.status !== 'expired'),
    [],
  );
  await assertInvariants(t, sys.db, sku);
});

test.serial('a session Stripe opened while every answer was lost is expired once the purchase failed', async (t) => {
  const sku = await sys.createProduct({ stock: 1 });
  await sys.emulatorCall('POST', '/_emulator/faults', SESSION_ANSWERS_LOST);
  let res;
  try {
    res = await sys.buy(sku, 'lost-answers');
  } finally {
    await sys.emulatorCall('DELETE', '/_emulator/faults');
  }
  t.is(res.status, 503);
  const { purchaseId } = res.body;
  await sys.waitForPurchase(purchaseId, (r) => r.status === 'failed');
  t.deepEqual(await movements(sku), ['create', 'hold', 'release']);
  // Closed by the saga after it failed: nobody can pay for a purchase that failed.
  await sys.temporal.workflow.getHandle(purchaseWorkflowId(purchaseId)).result();
  const sessions = await sessionsOf(purchaseId);
  t.is(sessions.length, 1, 'one session for the key, however many attempts');
  t.is(sessions[0].status, 'expired');
  t.true((await sys.pay(sessions[0].id, 'succeeded')).status >= 400, 'an expired session cannot be paid');
  t.like(await sys.stock(sku), { available: 1, held: 0, sold: 0 });
  await assertInvariants(t, sys.db, sku);
});

test.serial('bad input is a problem naming the fields, and writes nothing', async (t) => {
  // This buyer's rows only: the other test files write purchases into the same database meanwhile.
  const ofBuyer = async () =>
    (await sys.db.query('SELECT count(*)::int AS n FROM purchases WHERE buyer_id = $1', ['bad-input-y'])).rows[0].n;
  const before = await ofBuyer();
  const buyer = await asBuyer('bad-input-y');
  const noKey = await sys.api('POST', '/v1/purchases', { sku: 'x' }, buyer);
  t.is(noKey.status, 400);
  t.regex(noKey.body.detail, /Idempotency-Key/);
  const bad = await sys.api(
    'POST',
    '/v1/purchases',
    { sku: 7, quantity: 0, extra: true },
    { 'idempotency-key': 'bad-1', ...buyer },
  );
  t.is(bad.status, 400);
  t.is(bad.body.type, 'invalid-request');
  const fields = bad.body.errors.map((e: any) => e.field).sort();
  t.deepEqual(fields, ['extra', 'quantity', 'sku']);
  const notJson = await sys.api('POST', '/v1/purchases', '{"sku":', {
    'idempotency-key': 'bad-2',
    'content-type': 'application/json',
    ...buyer,
  });
  t.is(notJson.status, 400);
  t.is(notJson.body.type, 'invalid-request');
  const product = await sys.api(
    'POST',
    '/v1/products',
    { sku: 'p', stock: -1 },
    { authorization: 'Bearer test-admin-token' },
  );
  t.is(product.status, 400);
  t.deepEqual(product.body.errors.map((e: any) => e.field).sort(), ['currency', 'name', 'priceCents', 'stock']);
  const unauth = await sys.api('POST', '/v1/products', { sku: 'p' });
  t.is(unauth.status, 401);
  t.is(unauth.body.type, 'unauthorized');
  t.is(await ofBuyer(), before);
  t.is((await sys.api('GET', '/v1/products/p')).status, 404);
});

test('control characters, unknown methods and an opening time that is no time are clear 4xx problems', async (t) => {
  const nul = await sys.api(
    'POST',
    '/v1/purchases',
    { sku: 'a\u0000b' },
    { 'idempotency-key': 'nul-1', ...(await asBuyer('x')) },
  );
  t.is(nul.status, 400);
  t.is(nul.body.errors[0].field, 'sku');
  const method = await sys.api('DELETE', '/v1/purchases');
  t.is(method.status, 405);
  t.is(method.body.type, 'method-not-allowed');
  const badOpening = await sys.api(
    'POST',
    '/v1/products',
    { sku: 'opens-bad', name: 'x', priceCents: 1, currency: 'usd', stock: 1, opensAt: 'tomorrow morning' },
    { authorization: 'Bearer test-admin-token' },
  );
  t.is(badOpening.status, 400);
  t.is(badOpening.body.errors[0].field, 'opensAt');
});
