import test from 'ava';
import Stripe from 'stripe';

import { NO_RATE_LIMIT, sessionParams, startHarness } from './harness';

test('an injected 500 fails the next count matching calls, then calls succeed', async (t) => {
  const { stripe, control } = await startHarness(t);
  const armed = await control<{ id: number; status: number; remaining: number }>('POST', '/_emulator/faults', {
    path: '/v1/checkout/sessions',
    method: 'POST',
    count: 2,
  });
  t.is(armed.status, 201);
  t.is(armed.body.status, 500);

  for (let i = 0; i < 2; i += 1) {
    const error = await t.throwsAsync(stripe.checkout.sessions.create(sessionParams()), {
      instanceOf: Stripe.errors.StripeAPIError,
    });
    t.is(error?.statusCode, 500);
    t.is(error?.rawType, 'api_error');
  }
  const session = await stripe.checkout.sessions.create(sessionParams());
  t.is(session.status, 'open');
  t.deepEqual((await control<{ data: unknown[] }>('GET', '/_emulator/faults')).body.data, []);
});

test('a fault only hits the method it names', async (t) => {
  const { stripe, control } = await startHarness(t);
  const session = await stripe.checkout.sessions.create(sessionParams());
  await control('POST', '/_emulator/faults', { path: '/v1/checkout/sessions', method: 'POST' });
  t.is((await stripe.checkout.sessions.retrieve(session.id)).id, session.id);
  await t.throwsAsync(stripe.checkout.sessions.expire(session.id), { instanceOf: Stripe.errors.StripeAPIError });
  t.is((await stripe.checkout.sessions.expire(session.id)).status, 'expired');
});

test('a glob path matches the endpoints it describes', async (t) => {
  const { stripe, control } = await startHarness(t);
  const session = await stripe.checkout.sessions.create(sessionParams());
  await control('POST', '/_emulator/faults', { path: '/v1/checkout/sessions/*/expire', status: 503 });
  t.is((await stripe.checkout.sessions.retrieve(session.id)).status, 'open');
  const error = await t.throwsAsync(stripe.checkout.sessions.expire(session.id), {
    instanceOf: Stripe.errors.StripeAPIError,
  });
  t.is(error?.statusCode, 503);
});

test('a 429 fault is a rate limit error', async (t) => {
  const { stripe, control } = await startHarness(t);
  await control('POST', '/_emulator/faults', { path: '/v1/refunds', status: 429 });
  const error = await t.throwsAsync(stripe.refunds.create({ payment_intent: 'pi_whatever' }), {
    instanceOf: Stripe.errors.StripeRateLimitError,
  });
  t.is(error?.statusCode, 429);
  t.is(error?.code, 'rate_limit');
});

test('a failed call is not stored for its idempotency key, so the retry goes through', async (t) => {
  const { stripe, control } = await startHarness(t);
  await control('POST', '/_emulator/faults', { path: '/v1/checkout/sessions' });
  await t.throwsAsync(stripe.checkout.sessions.create(sessionParams(), { idempotencyKey: 'open-p_9' }), {
    instanceOf: Stripe.errors.StripeAPIError,
  });
  const session = await stripe.checkout.sessions.create(sessionParams(), { idempotencyKey: 'open-p_9' });
  t.is(session.status, 'open');
  t.false('idempotent-replayed' in session.lastResponse.headers);
});

test('a latency-only fault delays the call and then serves it', async (t) => {
  const { stripe, control } = await startHarness(t);
  await control('POST', '/_emulator/faults', { path: '/v1/checkout/sessions', latencyMs: 300 });
  const started = Date.now();
  const session = await stripe.checkout.sessions.create(sessionParams());
  t.true(Date.now() - started >= 290, `took ${Date.now() - started} ms`);
  t.is(session.status, 'open');
  t.deepEqual((await control<{ data: unknown[] }>('GET', '/_emulator/faults')).body.data, []);
});

test('latency past the client timeout surfaces as a connection error', async (t) => {
  const { emulator, control } = await startHarness(t);
  const impatient = new Stripe('sk_test_emulator', {
    host: '127.0.0.1',
    port: emulator.port,
    protocol: 'http',
    maxNetworkRetries: 0,
    timeout: 100,
  });
  await control('POST', '/_emulator/faults', { path: '/v1/checkout/sessions', latencyMs: 1000 });
  await t.throwsAsync(impatient.checkout.sessions.create(sessionParams()), {
    instanceOf: Stripe.errors.StripeConnectionError,
  });
});

test('a fault after serving does the work and loses the answer: the retry with the same key gets the real one', async (t) => {
  const { stripe, control } = await startHarness(t);
  await control('POST', '/_emulator/faults', {
    path: '/v1/checkout/sessions',
    afterServing: true,
    status: 503,
    count: 2,
  });
  // One request sent three times, as retries do: built once, so `expires_at` cannot move to the next second.
  const params = sessionParams();
  for (let i = 0; i < 2; i += 1) {
    const lost = await t.throwsAsync(stripe.checkout.sessions.create(params, { idempotencyKey: 'open-p_10' }), {
      instanceOf: Stripe.errors.StripeAPIError,
    });
    t.is(lost?.headers?.['idempotent-replayed'], undefined, 'a lost answer is no replay Stripe kept');
  }
  const session = await stripe.checkout.sessions.create(params, { idempotencyKey: 'open-p_10' });
  t.is(session.lastResponse.headers['idempotent-replayed'], 'true', 'the first call opened it');
  const { data } = await stripe.checkout.sessions.list({ limit: 10 });
  t.deepEqual(
    data.map((s) => s.id),
    [session.id],
  );
});

test('a saved fault is a 500 Stripe keeps under the key: the same key replays it, a new key is served', async (t) => {
  const { stripe, control } = await startHarness(t);
  const armed = await control<{ saved: boolean }>('POST', '/_emulator/faults', {
    path: '/v1/checkout/sessions',
    method: 'POST',
    saved: true,
  });
  t.true(armed.body.saved);
  const params = sessionParams();
  for (const replayed of [undefined, 'true']) {
    const error = await t.throwsAsync(stripe.checkout.sessions.create(params, { idempotencyKey: 'open-p_11' }), {
      instanceOf: Stripe.errors.StripeAPIError,
    });
    t.is(error?.statusCode, 500);
    t.is(error?.headers?.['stripe-should-retry'], 'false', 'Stripe tells the client not to retry it');
    t.is(error?.headers?.['idempotent-replayed'], replayed);
  }
  t.deepEqual((await stripe.checkout.sessions.list({ limit: 10 })).data, [], 'the failed endpoint opened nothing');
  const session = await stripe.checkout.sessions.create(params, { idempotencyKey: 'open-p_11-2' });
  t.is(session.status, 'open');
});

test('a saved fault is a 5xx of the endpoint: with afterServing or a 4xx it is refused', async (t) => {
  const { control } = await startHarness(t);
  for (const extra of [{ afterServing: true }, { status: 429 }]) {
    const res = await control<{ code: string }>('POST', '/_emulator/faults', { path: '/v1', saved: true, ...extra });
    t.is(res.status, 400);
    t.is(res.body.code, 'invalid_fault');
  }
  t.deepEqual((await control<{ data: unknown[] }>('GET', '/_emulator/faults')).body.data, []);
});

test('clearing faults disarms them', async (t) => {
  const { stripe, control } = await startHarness(t);
  await control('POST', '/_emulator/faults', { path: '/v1', count: 5 });
  const cleared = await control<{ cleared: number }>('DELETE', '/_emulator/faults');
  t.is(cleared.body.cleared, 1);
  t.is((await stripe.checkout.sessions.create(sessionParams())).status, 'open');
});

test('a malformed fault is refused with a problem response', async (t) => {
  const { control } = await startHarness(t);
  const response = await control<{ code: string; status: number }>('POST', '/_emulator/faults', {
    path: 'v1/refunds',
  });
  t.is(response.status, 400);
  t.is(response.body.code, 'invalid_fault');
});

test('a rate fault fails about that share of matching calls, stays armed, and repeats with a seed', async (t) => {
  const { stripe, control } = await startHarness(t, NO_RATE_LIMIT);
  const run = async (seed: number): Promise<boolean[]> => {
    await control('DELETE', '/_emulator/faults');
    const armed = await control<{ rate: number; remaining: number | null }>('POST', '/_emulator/faults', {
      path: '/v1/checkout/sessions',
      method: 'GET',
      rate: 0.2,
      seed,
    });
    t.is(armed.status, 201);
    t.like(armed.body, { rate: 0.2, remaining: null });
    const session = await stripe.checkout.sessions.create(sessionParams());
    const failed: boolean[] = [];
    for (let i = 0; i < 200; i += 1) {
      failed.push(
        await stripe.checkout.sessions.retrieve(session.id).then(
          () => false,
          (error: unknown) => {
            t.true(error instanceof Stripe.errors.StripeAPIError);
            return true;
          },
        ),
      );
    }
    return failed;
  };
  const first = await run(7);
  const hits = first.filter(Boolean).length;
  t.true(hits > 20 && hits < 60, `${hits} of 200 calls failed`);
  const listed = await control<{ data: Array<{ hits: number; seen: number; remaining: number | null }> }>(
    'GET',
    '/_emulator/faults',
  );
  t.like(listed.body.data[0], { hits, seen: 200, remaining: null });
  t.deepEqual(await run(7), first, 'the same seed fails the same calls');
});

test('a rate fault with a count stops after that many failures', async (t) => {
  const { stripe, control } = await startHarness(t, NO_RATE_LIMIT);
  await control('POST', '/_emulator/faults', { path: '/v1/checkout/sessions', rate: 0.5, count: 3, seed: 1 });
  let failures = 0;
  for (let i = 0; i < 60; i += 1) {
    await stripe.checkout.sessions.create(sessionParams()).catch(() => (failures += 1));
  }
  t.is(failures, 3);
  t.deepEqual((await control<{ data: unknown[] }>('GET', '/_emulator/faults')).body.data, []);
});

test('a rate outside (0, 1] is refused', async (t) => {
  const { control } = await startHarness(t);
  for (const rate of [0, 1.5, '0.2']) {
    const response = await control<{ code: string }>('POST', '/_emulator/faults', { path: '/v1', rate });
    t.is(response.status, 400, `rate ${JSON.stringify(rate)}`);
    t.is(response.body.code, 'invalid_fault');
  }
});
