import test from 'ava';
import Stripe from 'stripe';

import type { EndpointCounts } from '../src/rate-limit';
import { sessionParams, startHarness } from './harness';

// The emulator limits the account as Stripe limits a sandbox: 25 requests a second for the account
// and 25 for each endpoint, 429 `rate_limit` past either, with the reason in a header, nothing done.

interface Report {
  settings: { accountPerSecond: number; endpointPerSecond: number };
  limited: number;
  endpoints: EndpointCounts[];
}

/** Every call at once, each settled: what was made and what was refused. */
async function burst<T>(n: number, call: (i: number) => Promise<T>) {
  const settled = await Promise.allSettled(Array.from({ length: n }, (_, i) => call(i)));
  return {
    made: settled.filter((s) => s.status === 'fulfilled').map((s) => s.value),
    refused: settled.filter((s) => s.status === 'rejected').map((s) => s.reason as Error),
  };
}

/** A stopped clock for the limiter: its buckets do not refill while a burst is sent. */
const stopped = (): (() => number) => {
  const at = Date.now();
  return () => at;
};

test('by default a burst past 25 sessions a second is refused with 429 rate_limit, and nothing is made for it', async (t) => {
  const { stripe, control } = await startHarness(t, { rateLimitNow: stopped() });
  const { made, refused } = await burst(40, () => stripe.checkout.sessions.create(sessionParams()));
  t.is(made.length, 25);
  t.is(refused.length, 15);
  for (const err of refused) {
    t.true(err instanceof Stripe.errors.StripeRateLimitError, String(err));
    const e = err as Stripe.errors.StripeRateLimitError;
    t.is(e.statusCode, 429);
    t.is(e.code, 'rate_limit');
    t.is(e.headers?.['stripe-rate-limited-reason'], 'endpoint-rate');
  }
  const report = (await control<Report>('GET', '/_emulator/rate-limits')).body;
  await control('POST', '/_emulator/rate-limits', { accountPerSecond: 0, endpointPerSecond: 0 });
  t.is((await stripe.checkout.sessions.list({ limit: 100 })).data.length, 25, 'a refused create made nothing');
  t.deepEqual(report.settings, { accountPerSecond: 25, endpointPerSecond: 25 });
  t.is(report.limited, 15);
  t.like(
    report.endpoints.find((e) => e.endpoint === 'POST /v1/checkout/sessions'),
    { served: 25, limited: 15 },
  );
});

test('the account limit counts every endpoint together, and says global-rate', async (t) => {
  const { stripe, control } = await startHarness(t, {
    rateLimit: { accountPerSecond: 10, endpointPerSecond: 25 },
    rateLimitNow: stopped(),
  });
  const session = await stripe.checkout.sessions.create(sessionParams());
  const { made, refused } = await burst<unknown>(12, (i) =>
    i % 2 ? stripe.checkout.sessions.retrieve(session.id) : stripe.refunds.list({ limit: 1 }),
  );
  t.is(made.length, 9, 'ten a second, one of them spent on the session');
  t.is(refused.length, 3);
  for (const err of refused) {
    t.is((err as Stripe.errors.StripeRateLimitError).headers?.['stripe-rate-limited-reason'], 'global-rate');
  }
  const report = (await control<Report>('GET', '/_emulator/rate-limits')).body;
  t.truthy(
    report.endpoints.find((e) => e.endpoint === 'GET /v1/checkout/sessions/:id'),
    'ids are one endpoint',
  );
});

test('a client that paces itself below the limit is never refused, and the bucket refills as time passes', async (t) => {
  // The limiter's clock moves only when the test says, so a slow machine's round trips refill nothing.
  let now = Date.now();
  const { stripe, control } = await startHarness(t, {
    rateLimit: { accountPerSecond: 10, endpointPerSecond: 10 },
    rateLimitNow: () => now,
  });
  const first = await burst(10, () => stripe.refunds.list({ limit: 1 }));
  t.is(first.refused.length, 0);
  await t.throwsAsync(stripe.refunds.list({ limit: 1 }), { instanceOf: Stripe.errors.StripeRateLimitError });
  // 8 a second for 2 s, with the bucket empty at the start: the refill keeps ahead of the pace.
  for (let i = 0; i < 16; i++) {
    now += 125;
    await stripe.refunds.list({ limit: 1 });
  }
  t.is((await control<Report>('GET', '/_emulator/rate-limits')).body.limited, 1);
  // Faster than the refill: 20 a second, from an empty bucket, is refused about every other call.
  now += 1_000;
  await burst(10, () => stripe.refunds.list({ limit: 1 }));
  const paced = [];
  for (let i = 0; i < 10; i++) {
    now += 50;
    paced.push(
      await stripe.refunds.list({ limit: 1 }).then(
        () => 'made',
        () => 'refused',
      ),
    );
  }
  t.is(paced.filter((p) => p === 'refused').length, 5, paced.join(' '));
});

test('limits set to 0 refuse nothing, and the control route changes them at run time', async (t) => {
  const { stripe, control } = await startHarness(t, {
    rateLimit: { accountPerSecond: 0, endpointPerSecond: 0 },
    rateLimitNow: stopped(),
  });
  t.is((await burst(60, () => stripe.refunds.list({ limit: 1 }))).refused.length, 0);
  const set = await control<Report>('POST', '/_emulator/rate-limits', { endpointPerSecond: 5, resetCounts: true });
  t.deepEqual(set.body.settings, { accountPerSecond: 0, endpointPerSecond: 5 });
  t.is((await burst(8, () => stripe.refunds.list({ limit: 1 }))).refused.length, 3);
  const bad = await control<{ code: string }>('POST', '/_emulator/rate-limits', { endpointPerSecond: -1 });
  t.is(bad.status, 400);
  t.is(bad.body.code, 'invalid_endpointPerSecond');
});
