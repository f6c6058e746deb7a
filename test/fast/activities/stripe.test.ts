import { fc, testProp } from '@fast-check/ava';
import { ApplicationFailure } from '@temporalio/common';
import { MockActivityEnvironment } from '@temporalio/testing';
import test from 'ava';
import type Stripe from 'stripe';
import {
  classifyStripeError,
  createStripeSteps,
  KEY_CHAIN_MAX,
  rateLimitDelayMs,
  type OpenCheckoutInput,
} from '../../../activities/stripe';
import type { StripeEndpoint, StripeOutcome } from '../../../vocabulary';

// The saga's Stripe steps against a stand-in for stripe-node: the idempotency key each step sends,
// how Stripe's refusals become Temporal failures (429 waited out with jitter, other 4xx for good),
// and the answers the steps make of Stripe's. (The requests' shapes against Stripe's spec:
// test/contract/stripe-calls.test.ts.)

type Call = { method: string; args: unknown[] };
const silent = () => {};
const logger = { log: silent, trace: silent, debug: silent, info: silent, warn: silent, error: silent };
/** An activity's context (its attempt), without the failure lines the mock logs. */
const activityEnv = (attempt = 1) => new MockActivityEnvironment({ attempt }, { logger });
const stripeError = (statusCode: number, code = 'x', message = `status ${statusCode}`) =>
  Object.assign(new Error(message), { statusCode, code });
/** A 5xx Stripe keeps under the key, as its replay reads (stripe-node's error carries the headers). */
const keptError = () =>
  Object.assign(stripeError(500), { headers: { 'idempotent-replayed': 'true', 'stripe-should-retry': 'false' } });

/** A stripe-node stand-in: each method records its call and answers with `answers[method]`. */
function fakeStripe(answers: Record<string, (...args: unknown[]) => unknown>) {
  const calls: Call[] = [];
  const method =
    (name: string) =>
    async (...args: unknown[]) => {
      calls.push({ method: name, args });
      const answer = answers[name];
      if (!answer) throw new Error(`unexpected call to ${name}`);
      return answer(...args);
    };
  const stripe = {
    checkout: {
      sessions: {
        create: method('sessions.create'),
        retrieve: method('sessions.retrieve'),
        expire: method('sessions.expire'),
      },
    },
    refunds: { create: method('refunds.create'), retrieve: method('refunds.retrieve') },
    paymentIntents: { retrieve: method('paymentIntents.retrieve') },
  } as unknown as Stripe;
  return { stripe, calls };
}

function steps(answers: Record<string, (...args: unknown[]) => unknown>) {
  const { stripe, calls } = fakeStripe(answers);
  const counted: [StripeEndpoint, StripeOutcome][] = [];
  const s = createStripeSteps({
    stripe,
    successUrl: 'https://shop.example/purchases/{purchaseId}',
    cancelUrl: 'https://shop.example/purchases/{purchaseId}?result=cancel',
    onStripeCall: (endpoint, outcome) => counted.push([endpoint, outcome]),
  });
  return { steps: s, calls, counted };
}

const input: OpenCheckoutInput = {
  purchaseId: 'pur_1',
  sku: 'SNEAKER-42',
  buyerId: 'buyer-7',
  quantity: 1,
  productName: 'Sneaker',
  unitAmountCents: 12_500,
  currency: 'usd',
  holdExpiresAt: '2030-01-01T12:10:00.000Z',
  holdSeconds: 600,
};
const expiresAt = new Date('2030-01-01T12:40:00.000Z');
const openSession = { id: 'cs_1', url: 'https://pay.example/cs_1', expires_at: expiresAt.getTime() / 1000 };

testProp(
  'a rate-limited retry waits between 250 ms and the doubled ceiling, never past 20 s',
  [fc.integer({ min: -3, max: 60 }), fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true })],
  (t, attempt, r) => {
    const ceiling = Math.min(20_000, 1_000 * 2 ** Math.max(0, attempt - 1));
    const delay = rateLimitDelayMs(attempt, () => r);
    t.true(delay >= 250 && delay <= Math.max(250, ceiling), `${delay} ms after attempt ${attempt}`);
  },
);

test('the ceiling of the jitter doubles from 1 s per rate-limited attempt up to 20 s', (t) => {
  t.deepEqual(
    [1, 2, 3, 4, 5, 6, 10].map((n) => rateLimitDelayMs(n, () => 0.999_999)),
    [1_000, 2_000, 4_000, 8_000, 16_000, 20_000, 20_000],
  );
  t.is(
    rateLimitDelayMs(3, () => 0),
    250,
    'never sooner than the floor',
  );
});

test('a 429 becomes a retryable StripeRateLimited failure with a jittered delay of its own', (t) => {
  const rateLimited = { statusCode: 429, code: 'rate_limit', message: 'Request rate limit exceeded.' };
  const delays = new Set<number>();
  for (let i = 0; i < 20; i++) {
    const failure = classifyStripeError(rateLimited, 'opening the Checkout Session', 3) as ApplicationFailure;
    t.is(failure.type, 'StripeRateLimited');
    t.false(failure.nonRetryable);
    t.true(failure.nextRetryDelay! >= 250 && failure.nextRetryDelay! <= 4_000, `${failure.nextRetryDelay} ms`);
    delays.add(failure.nextRetryDelay as number);
  }
  t.true(delays.size > 1, 'callers turned away together come back apart');
});

testProp(
  'a 4xx other than 409 and 429 is StripeRejected for good; 409, 5xx and no answer are retried',
  [fc.oneof(fc.integer({ min: 400, max: 599 }), fc.constant(undefined))],
  (t, status) => {
    const failure = classifyStripeError(
      status ? stripeError(status) : new Error('socket hang up'),
      'refunding',
    ) as ApplicationFailure;
    const refused = status !== undefined && status < 500 && status !== 409 && status !== 429;
    t.is(failure.type, refused ? 'StripeRejected' : status === 429 ? 'StripeRateLimited' : 'StripeUnavailable');
    t.is(failure.nonRetryable, refused);
    t.regex(failure.message, status ? new RegExp(`^refunding: Stripe answered ${status}`) : /Stripe unreachable/);
  },
);

test('openCheckout sends the session under checkout-<purchaseId>, and a retried attempt sends the same request', async (t) => {
  const { steps: s, calls, counted } = steps({ 'sessions.create': () => openSession });
  const first = await s.openCheckout(input, expiresAt);
  await s.openCheckout(input, expiresAt);
  t.deepEqual(first, { sessionId: 'cs_1', url: openSession.url, sessionExpiresAt: expiresAt.toISOString() });
  t.deepEqual(calls[0].args[1], { idempotencyKey: 'checkout-pur_1' });
  t.deepEqual(calls[0].args, calls[1].args, 'the same request under the same key');
  t.like(calls[0].args[0], { expires_at: expiresAt.getTime() / 1000, client_reference_id: 'pur_1' });
  t.deepEqual(counted, [
    ['checkout.sessions.create', 'ok'],
    ['checkout.sessions.create', 'ok'],
  ]);
});

test('a rate-limited openCheckout in its fourth attempt waits up to 8 s, and is counted rate_limited', async (t) => {
  const { steps: s, counted } = steps({ 'sessions.create': () => Promise.reject(stripeError(429, 'rate_limit')) });
  const env = activityEnv(4);
  const failure = await t.throwsAsync(
    env.run(() => s.openCheckout(input, expiresAt)),
    {
      instanceOf: ApplicationFailure,
    },
  );
  t.is(failure.type, 'StripeRateLimited');
  t.true(failure.nextRetryDelay! >= 250 && failure.nextRetryDelay! <= 8_000, `${failure.nextRetryDelay} ms`);
  t.deepEqual(counted, [['checkout.sessions.create', 'rate_limited']]);
});

test('a session Stripe refuses, or one without a URL, fails openCheckout for good', async (t) => {
  const refused = steps({ 'sessions.create': () => Promise.reject(stripeError(400, 'parameter_invalid')) });
  const env = activityEnv();
  const err = await t.throwsAsync(env.run(() => refused.steps.openCheckout(input, expiresAt)));
  t.like(err, { type: 'StripeRejected', nonRetryable: true });
  t.deepEqual(refused.counted, [['checkout.sessions.create', 'refused']]);
  const noUrl = steps({ 'sessions.create': () => ({ ...openSession, url: null }) });
  const err2 = await t.throwsAsync(env.run(() => noUrl.steps.openCheckout(input, expiresAt)));
  t.like(err2, { type: 'StripeRejected', nonRetryable: true, message: 'Stripe returned a session without a URL' });
});

test('expireCheckout uses expire-<purchaseId>; a session no longer open is read back, paid or not', async (t) => {
  const open = steps({ 'sessions.expire': () => ({ payment_status: 'unpaid' }) });
  t.deepEqual(await open.steps.expireCheckout('pur_1', 'cs_1'), { status: 'expired', paymentStatus: 'unpaid' });
  t.deepEqual(open.calls[0].args, ['cs_1', {}, { idempotencyKey: 'expire-pur_1' }]);

  const paid = steps({
    'sessions.expire': () => Promise.reject(stripeError(400, 'checkout_session_not_open')),
    'sessions.retrieve': () => ({
      status: 'complete',
      payment_status: 'paid',
      payment_intent: 'pi_1',
      amount_total: 12_500,
      currency: 'usd',
    }),
  });
  t.deepEqual(await paid.steps.expireCheckout('pur_1', 'cs_1'), {
    status: 'complete',
    paymentStatus: 'paid',
    paymentIntentId: 'pi_1',
    amountCents: 12_500,
    currency: 'usd',
  });
  t.deepEqual(paid.counted, [
    ['checkout.sessions.expire', 'refused'],
    ['checkout.sessions.retrieve', 'ok'],
  ]);
  const down = steps({ 'sessions.expire': () => Promise.reject(stripeError(503)) });
  await t.throwsAsync(down.steps.expireCheckout('pur_1', 'cs_1'), {
    message: /expiring the Checkout Session: Stripe answered 503/,
  });
});

test('each refund path has a key of its own: step, subject, the refund it replaces and the attempt', async (t) => {
  const { steps: s, calls } = steps({ 'refunds.create': () => ({ id: 're_1', status: 'pending' }) });
  const base = { purchaseId: 'pur_1', paymentIntentId: 'pi_1', reason: 'late' };
  await s.refundPayment({ ...base, step: 'late' });
  await s.refundPayment({ ...base, step: 'support', attempt: 2 });
  await s.refundPayment({ ...base, step: 'stray', sessionId: 'cs_9' });
  await s.refundPayment({ ...base, step: 'support', replaces: 're_0', attempt: 1 });
  t.deepEqual(
    calls.map((c) => (c.args[1] as { idempotencyKey: string }).idempotencyKey),
    ['refund-late-pur_1', 'refund-support-pur_1-2', 'refund-stray-cs_9', 'refund-support-pur_1-after-re_0-1'],
  );
  t.like(calls[2].args[0], {
    payment_intent: 'pi_1',
    metadata: { purchase_id: 'pur_1', refund_step: 'stray', session_id: 'cs_9' },
  });
});

test('a refund reason is cut to 450 characters, and a payment already refunded counts as refunded', async (t) => {
  const { steps: s, calls } = steps({
    'refunds.create': () => Promise.reject(stripeError(400, 'charge_already_refunded')),
  });
  const done = await s.refundPayment({
    purchaseId: 'pur_1',
    paymentIntentId: 'pi_1',
    reason: 'x'.repeat(600),
    step: 'late',
  });
  t.deepEqual(done, { status: 'succeeded' });
  t.is((calls[0].args[0] as { metadata: { reason: string } }).metadata.reason.length, 450);
});

test('closeUnansweredCheckout expires the session the lost attempt opened, and finds none when Stripe refused it', async (t) => {
  const found = steps({
    'sessions.create': () => ({ ...openSession, status: 'open' }),
    'sessions.expire': () => ({ payment_status: 'unpaid' }),
  });
  t.deepEqual(await found.steps.closeUnansweredCheckout(input, expiresAt), {
    sessionId: 'cs_1',
    status: 'expired',
    paymentStatus: 'unpaid',
  });
  const paid = steps({ 'sessions.create': () => ({ ...openSession, status: 'complete', payment_status: 'paid' }) });
  t.like(await paid.steps.closeUnansweredCheckout(input, expiresAt), { status: 'complete', paymentStatus: 'paid' });
  const refused = steps({ 'sessions.create': () => Promise.reject(stripeError(400)) });
  t.is(await refused.steps.closeUnansweredCheckout(input, expiresAt), null);
  const down = steps({ 'sessions.create': () => Promise.reject(stripeError(500)) });
  await t.throwsAsync(down.steps.closeUnansweredCheckout(input, expiresAt), { message: /Stripe answered 500/ });
});

test('the card of a payment is its latest charge’s fingerprint, and a refund’s state carries its failure', async (t) => {
  const { steps: s, calls } = steps({
    'paymentIntents.retrieve': () => ({ latest_charge: { payment_method_details: { card: { fingerprint: 'fp_1' } } } }),
    'refunds.retrieve': () => ({ id: 're_1', status: 'failed', failure_reason: 'expired_or_canceled_card' }),
  });
  t.is(await s.cardOfPayment('pi_1'), 'fp_1');
  t.deepEqual(calls[0].args, ['pi_1', { expand: ['latest_charge'] }]);
  t.deepEqual(await s.getRefund('re_1'), {
    refundId: 're_1',
    status: 'failed',
    failureReason: 'expired_or_canceled_card',
  });
  const bare = steps({ 'paymentIntents.retrieve': () => ({ latest_charge: 'ch_1' }) });
  t.is(await bare.steps.cardOfPayment('pi_1'), null, 'a charge not expanded names no card');
});

test('a 5xx Stripe replays for a key moves the step along its chain of keys, the same for every attempt and the close', async (t) => {
  // Each step: the first key and `-r1` are spent (their kept 500s replayed), `-r2` is served.
  const spentTwice = (answer: unknown) => {
    let n = 0;
    return () => (n++ < 2 ? Promise.reject(keptError()) : answer);
  };
  const {
    steps: s,
    calls,
    counted,
  } = steps({
    'sessions.create': spentTwice(openSession),
    'sessions.expire': spentTwice({ payment_status: 'unpaid' }),
    'refunds.create': spentTwice({ id: 're_1', status: 'succeeded' }),
  });
  // The attempt number does not name the key: a later attempt walks the same chain.
  await activityEnv(3).run(async () => {
    t.like(await s.openCheckout(input, expiresAt), { sessionId: 'cs_1' });
    t.like(await s.expireCheckout('pur_1', 'cs_1'), { status: 'expired' });
    t.like(await s.refundPayment({ purchaseId: 'pur_1', paymentIntentId: 'pi_1', reason: 'r', step: 'support' }), {
      refundId: 're_1',
    });
  });
  const keys = calls.map((c) => (c.args.at(-1) as { idempotencyKey: string }).idempotencyKey);
  t.deepEqual(keys, [
    'checkout-pur_1',
    'checkout-pur_1-r1',
    'checkout-pur_1-r2',
    'expire-pur_1',
    'expire-pur_1-r1',
    'expire-pur_1-r2',
    'refund-support-pur_1',
    'refund-support-pur_1-r1',
    'refund-support-pur_1-r2',
  ]);
  t.deepEqual(
    counted.map(([, outcome]) => outcome),
    ['failed', 'failed', 'ok', 'failed', 'failed', 'ok', 'failed', 'failed', 'ok'],
  );
  // A fresh 500 (not a replay) stays on its key: Temporal retries the attempt, which meets its answer.
  const fresh = steps({ 'sessions.create': () => Promise.reject(stripeError(500)) });
  await t.throwsAsync(fresh.steps.openCheckout(input, expiresAt), { message: /Stripe answered 500/ });
  t.is(fresh.calls.length, 1);
  // Closing what an attempt may have opened walks the same chain: past the spent key, the session
  // the attempt under `-r1` opened, which it expires.
  let n = 0;
  const close = steps({
    'sessions.create': () => (n++ === 0 ? Promise.reject(keptError()) : { ...openSession, status: 'open' }),
    'sessions.expire': () => ({ payment_status: 'unpaid' }),
  });
  t.like(await close.steps.closeUnansweredCheckout(input, expiresAt), { sessionId: 'cs_1', status: 'expired' });
  t.deepEqual(
    close.calls
      .filter((c) => c.method === 'sessions.create')
      .map((c) => (c.args[1] as { idempotencyKey: string }).idempotencyKey),
    ['checkout-pur_1', 'checkout-pur_1-r1'],
  );
  // A chain spent to its end fails the step (Temporal retries it, and it fails for good in time).
  const spent = steps({ 'refunds.create': () => Promise.reject(keptError()) });
  await t.throwsAsync(
    spent.steps.refundPayment({ purchaseId: 'pur_1', paymentIntentId: 'pi_1', reason: 'r', step: 'late' }),
    { message: /Stripe answered 500/ },
  );
  t.is(spent.calls.length, KEY_CHAIN_MAX + 1);
});
