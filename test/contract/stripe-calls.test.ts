// Contract test: every Stripe call the activities make is sent to the official stripe-mock, which
// validates each request against Stripe's OpenAPI spec and answers 400 to a request that breaks it (an
// unknown top-level parameter, a wrong type or enum value at any depth). Its limits: it checks the
// shape of a request, not Stripe's business rules, so the 30-minute to 24-hour window for `expires_at`
// is asserted here; and unknown keys inside nested objects (`line_items[].price_data`) pass it.
import test from 'ava';
import type Stripe from 'stripe';

import { sessionExpiry, sessionRequest } from '../../activities/checkout-session';
import { createPaymentEvidenceSteps } from '../../activities/payment-evidence';
import { classifyStripeError, createStripeSteps, type OpenCheckoutInput } from '../../activities/stripe';
import { type StripeMock, startStripeMock } from '../../dev/stripe-mock';
import { createStripe } from '../../config/clients';

const SECRET_KEY = 'sk_test_123';
const MINUTE = 60;

let mock: StripeMock;
let stripe: Stripe;
let activities: ReturnType<typeof createStripeSteps>;

/** Postgres and the hold desk are for the stock activities; touching them here is a bug in this test. */
test.before(async (t) => {
  // Only the build's progress is shown; stripe-mock's request log goes on after this hook has ended.
  mock = await startStripeMock((line) => {
    if (!line.startsWith('stripe-mock: ')) t.log(line);
  });
  stripe = createStripe({ stripeSecretKey: SECRET_KEY, stripeApiUrl: mock.url });
  activities = createStripeSteps({
    stripe,
    successUrl: 'https://shop.example/v1/purchases/{purchaseId}',
    cancelUrl: 'https://shop.example/v1/purchases/{purchaseId}',
  });
});

test.after.always(async () => {
  await mock?.stop();
});

function checkoutInput(purchaseId: string, holdSeconds: number): OpenCheckoutInput & { holdEnd: number } {
  // A hold taken just now, as takeHold reports it.
  const holdEnd = Math.ceil(Date.now() / 1000) + holdSeconds;
  return {
    purchaseId,
    sku: 'SNEAKER-42',
    buyerId: 'buyer-7',
    quantity: 2,
    productName: 'Limited sneaker, size 42',
    unitAmountCents: 12_500,
    currency: 'usd',
    holdExpiresAt: new Date(holdEnd * 1000).toISOString(),
    holdSeconds,
    holdEnd,
  };
}

/** Stripe only accepts `expires_at` from 30 minutes to 24 hours after the session is created. */
function assertWithinStripeWindow(t: { true(v: boolean, m?: string): void }, expiresAt: string): void {
  const inSeconds = Date.parse(expiresAt) / 1000 - Date.now() / 1000;
  t.true(inSeconds >= 30 * MINUTE && inSeconds <= 24 * 60 * MINUTE, `expires_at is ${inSeconds} s from now`);
}

test('openCheckout for a 10-minute hold sends a session Stripe accepts, expiring at the 30-minute minimum', async (t) => {
  const input = checkoutInput('contract-hold-600', 600);
  const now = Date.now();
  const expiresAt = sessionExpiry(input.holdExpiresAt, now);
  const session = await activities.openCheckout(input, expiresAt);

  t.regex(session.sessionId, /^cs_/);
  t.regex(session.url, /^https:\/\//);
  // stripe-mock echoes the request's expires_at: 30 minutes and the 5-minute margin from when it was chosen.
  t.is(session.sessionExpiresAt, new Date((Math.ceil(now / 1000) + 35 * MINUTE) * 1000).toISOString());
  assertWithinStripeWindow(t, session.sessionExpiresAt);
});

test('openCheckout for a one-hour hold sends a session Stripe accepts, expiring with the hold', async (t) => {
  const input = checkoutInput('contract-hold-3600', 3600);
  const session = await activities.openCheckout(input, sessionExpiry(input.holdExpiresAt, Date.now()));

  t.regex(session.sessionId, /^cs_/);
  t.is(session.sessionExpiresAt, input.holdExpiresAt);
  assertWithinStripeWindow(t, session.sessionExpiresAt);
});

test('a one-hour hold whose session waited 40 minutes for the budget still gets an expiry Stripe accepts', async (t) => {
  const input = checkoutInput('contract-hold-waited', 3600);
  // The session is created 40 minutes into the hold: its end is only 20 minutes away.
  const later = Date.now() + 40 * MINUTE * 1000;
  const expiresAt = sessionExpiry(input.holdExpiresAt, later);
  const fromThen = expiresAt.getTime() / 1000 - later / 1000;
  t.true(fromThen >= 30 * MINUTE && fromThen <= 24 * 60 * MINUTE, `expires_at is ${fromThen} s after the create`);
  t.is(expiresAt.getTime(), (Math.ceil(later / 1000) + 35 * MINUTE) * 1000, "Stripe's minimum from then");
});

test('openCheckout for a product with shippingCountries sends shipping_address_collection Stripe accepts', async (t) => {
  const input = { ...checkoutInput('contract-shipping', 600), shippingCountries: ['DE', 'FR', 'US'] };
  const session = await activities.openCheckout(input, sessionExpiry(input.holdExpiresAt, Date.now()));

  t.regex(session.sessionId, /^cs_/);
  // An unknown or misspelt country is refused by Stripe's spec: the parameter is validated, not ignored.
  const wrong = await t.throwsAsync(
    activities.openCheckout(
      { ...checkoutInput('contract-shipping-bad', 600), shippingCountries: ['XX'] },
      sessionExpiry(new Date(Date.now() + 600_000).toISOString(), Date.now()),
    ),
  );
  t.regex(wrong.message, /Stripe answered 400/);
});

test('shippingAddressKey sends a session retrieve Stripe accepts and reads collected_information', async (t) => {
  const key = await createPaymentEvidenceSteps({ stripe }).shippingAddressKey('cs_test_contract_shipping');
  // stripe-mock's fixture session may or may not carry an address: a key is a SHA-256, or nothing collected.
  t.true(key === null || /^[0-9a-f]{64}$/.test(key), String(key));
});

test('readPaymentEvidence sends one session retrieve, with the payment and its charge expanded, that Stripe accepts', async (t) => {
  const evidence = await createPaymentEvidenceSteps({ stripe }).readPaymentEvidence('cs_test_contract_evidence');
  // stripe-mock's fixture may or may not carry a payment or an address: whatever it names has the right shape.
  if (evidence.addressKey) t.regex(evidence.addressKey, /^[0-9a-f]{64}$/);
  if (evidence.method) t.is(typeof evidence.method.type, 'string');
  if (evidence.paymentIntentId) t.regex(evidence.paymentIntentId, /^pi_/);
  t.pass();
});

test('expireCheckout sends an expire request Stripe accepts', async (t) => {
  const input = checkoutInput('contract-expire', 600);
  const { sessionId } = await activities.openCheckout(input, sessionExpiry(input.holdExpiresAt, Date.now()));
  const state = await activities.expireCheckout('contract-expire', sessionId);

  // Stateless stripe-mock answers 200 with a session for any id, so this is the expire path, not the fallback.
  t.deepEqual(state, { status: 'expired', paymentStatus: 'unpaid' });
});

test('getSessionPayment sends a retrieve request Stripe accepts and reads the PaymentIntent id', async (t) => {
  const state = await activities.getSessionPayment('cs_test_contract_payment');

  t.true(['open', 'complete', 'expired'].includes(state.status), `status ${state.status}`);
  t.is(typeof state.paymentStatus, 'string');
  t.regex(state.paymentIntentId ?? '', /^pi_/);
});

test('refundPayment sends a refund Stripe accepts', async (t) => {
  const refund = await activities.refundPayment({
    purchaseId: 'contract-refund',
    paymentIntentId: 'pi_contract_refund',
    reason: 'paid after the hold expired and the unit was sold to someone else',
    step: 'late',
  });

  t.regex(refund.refundId ?? '', /^re_/);
  t.is(typeof refund.status, 'string');
});

test('stripe-mock rejects a Checkout Session with a parameter Stripe does not know', async (t) => {
  const params = { mode: 'payment', surprise_param: 'x' } as Stripe.Checkout.SessionCreateParams;
  const error = await t.throwsAsync(stripe.checkout.sessions.create(params));

  const e = error as unknown as { statusCode?: number; type?: string; message: string };
  t.is(e.statusCode, 400);
  t.is(e.type, 'StripeInvalidRequestError');
  t.regex(e.message, /additional properties are not allowed/);
});

test('a request Stripe rejects becomes a non-retryable StripeRejected failure', async (t) => {
  const params = { mode: 'payment', expires_at: 'soon' } as unknown as Stripe.Checkout.SessionCreateParams;
  const error = await t.throwsAsync(stripe.checkout.sessions.create(params));

  const failure = classifyStripeError(error, 'opening the Checkout Session') as {
    type?: string;
    nonRetryable?: boolean;
    message: string;
  };
  t.is(failure.type, 'StripeRejected');
  t.true(failure.nonRetryable);
  t.regex(failure.message, /Stripe answered 400: .*'expires_at' validation failed: value is not numeric/);
});

// Calls the payments emulator serves for payment methods other than cards
// (packages/stripe-emulator/README.md, Payment methods) that the service does not make yet: Stripe's
// spec takes them as the emulator does. (`allowed_payment_method_types`, which the emulator also
// reads, is newer than stripe-mock's spec.)
test('the payment-method calls the emulator serves are requests Stripe accepts', async (t) => {
  const intent = await stripe.paymentIntents.retrieve('pi_contract_methods', {
    expand: ['latest_charge', 'payment_method'],
  });
  t.is(intent.object, 'payment_intent');
  const method = await stripe.paymentMethods.retrieve('pm_contract_methods');
  t.is(method.object, 'payment_method');
  t.is(typeof method.type, 'string');

  const session = await stripe.checkout.sessions.create({
    ...sessionRequest(
      checkoutInput('contract-methods', 600),
      sessionExpiry(new Date(Date.now() + 600_000).toISOString(), Date.now()),
      { successUrl: 'https://shop.example/done', cancelUrl: 'https://shop.example/cancelled' },
    ),
    excluded_payment_method_types: ['us_bank_account'],
  });
  t.regex(session.id, /^cs_/);
});
