import test from 'ava';
import type Stripe from 'stripe';

import { type Harness, acceptedTypes, pay, sessionParams, startHarness, tempStateFile } from './harness';

// Paying with each method the emulator knows: the charge carries the `payment_method_details` Stripe
// sends for that type, the PaymentMethod says the same, and bank debits take the delayed path.

/** A one-item session in `currency` (the bank debits each take one currency only). */
function sessionIn(currency: string, overrides: Partial<Stripe.Checkout.SessionCreateParams> = {}) {
  return sessionParams({
    line_items: [{ quantity: 1, price_data: { currency, unit_amount: 2500, product_data: { name: 'Sneaker' } } }],
    ...overrides,
  });
}

/** The PaymentIntent with its latest charge and PaymentMethod expanded, as the service reads it. */
async function paidWith(harness: Harness, intentId: string) {
  const intent = await harness.stripe.paymentIntents.retrieve(intentId, {
    expand: ['latest_charge', 'payment_method'],
  });
  return {
    intent,
    charge: intent.latest_charge as Stripe.Charge,
    method: intent.payment_method as Stripe.PaymentMethod,
  };
}

test('a card payment keeps today’s card details, and its PaymentMethod has the same fingerprint', async (t) => {
  const harness = await startHarness(t);
  const session = await harness.stripe.checkout.sessions.create(sessionIn('usd'));
  const paid = await pay(harness, session.id, 'succeeded', {
    paymentMethod: { type: 'card', fingerprint: 'cardFp0001' },
  });
  t.is(paid.status, 200);

  const { intent, charge, method } = await paidWith(harness, paid.session.payment_intent as string);
  t.deepEqual(intent.payment_method_types, ['card', 'link', 'us_bank_account']);
  t.is(charge.payment_method_details?.type, 'card');
  t.like(charge.payment_method_details?.card, {
    brand: 'visa',
    last4: '4242',
    fingerprint: 'cardFp0001',
    exp_year: 2034,
  });
  t.is(charge.payment_method, method.id);
  t.is(method.type, 'card');
  t.like(method.card, { brand: 'visa', last4: '4242', fingerprint: 'cardFp0001' });
  t.deepEqual(await harness.stripe.paymentMethods.retrieve(method.id), method);
});

const DEBITS = [
  {
    type: 'sepa_debit',
    currency: 'eur',
    details: { bank_code: '37040044', branch_code: '', country: 'DE', fingerprint: 'ibanFp0001', last4: '3000' },
  },
  { type: 'bacs_debit', currency: 'gbp', details: { fingerprint: 'bacsFp0001', last4: '2345', sort_code: '108800' } },
  {
    type: 'us_bank_account',
    currency: 'usd',
    details: {
      account_holder_type: 'individual',
      account_type: 'checking',
      bank_name: 'STRIPE TEST BANK',
      fingerprint: 'achFp00001',
      last4: '6789',
      routing_number: '110000000',
    },
  },
] as const;

for (const debit of DEBITS) {
  test(`a ${debit.type} payment completes unpaid, settles later, and carries the bank account’s fingerprint`, async (t) => {
    const harness = await startHarness(t);
    const session = await harness.stripe.checkout.sessions.create(sessionIn(debit.currency));
    t.true(session.payment_method_types.includes(debit.type));
    const paymentMethod = { type: debit.type, fingerprint: debit.details.fingerprint };

    const pending = await pay(harness, session.id, 'async_pending', { paymentMethod });
    t.is(pending.status, 200);
    t.is(pending.session.status, 'complete');
    t.is(pending.session.payment_status, 'unpaid');
    const processing = await paidWith(harness, pending.session.payment_intent as string);
    t.is(processing.intent.status, 'processing');
    t.is(processing.intent.processing, null, 'Stripe’s processing hash describes only cards');
    t.is(processing.charge.status, 'pending');
    t.is(processing.charge.payment_method_details?.type, debit.type);
    t.is(processing.charge.payment_method_details?.card, undefined);
    const details = processing.charge.payment_method_details?.[debit.type] as unknown as Record<string, unknown>;
    t.like(details, debit.details);
    t.regex(details.mandate as string, /^mandate_/);
    t.is(processing.charge.billing_details.email, 'buyer@example.com');
    t.is(processing.method.type, debit.type);
    t.like(processing.method[debit.type], debit.details);

    const settled = await pay(harness, session.id, 'async_succeeded');
    t.is(settled.session.payment_status, 'paid');
    const after = await paidWith(harness, pending.session.payment_intent as string);
    t.is(after.intent.status, 'succeeded');
    t.is(after.charge.id, processing.charge.id);
    t.is(after.charge.status, 'succeeded');
    t.like(after.charge.payment_method_details?.[debit.type], debit.details);
    t.deepEqual(await acceptedTypes(harness, 2), [
      'checkout.session.completed',
      'checkout.session.async_payment_succeeded',
    ]);
  });
}

test('a failed bank debit fails the PaymentIntent with the debit’s type', async (t) => {
  const harness = await startHarness(t);
  const session = await harness.stripe.checkout.sessions.create(sessionIn('eur'));
  await pay(harness, session.id, 'async_pending', { paymentMethod: { type: 'sepa_debit' } });
  const failed = await pay(harness, session.id, 'async_failed');
  t.is(failed.status, 200);
  t.is(failed.session.payment_status, 'unpaid');

  const { intent, charge } = await paidWith(harness, failed.session.payment_intent as string);
  t.is(intent.status, 'requires_payment_method');
  t.is(intent.last_payment_error?.code, 'insufficient_funds');
  t.is(intent.last_payment_error?.payment_method_type, 'sepa_debit');
  t.is(charge.status, 'failed');
  t.is(charge.payment_method_details?.type, 'sepa_debit');
  t.deepEqual(await acceptedTypes(harness, 3), [
    'checkout.session.completed',
    'payment_intent.payment_failed',
    'checkout.session.async_payment_failed',
  ]);
});

test('a Link payment carries only a country, and its PaymentMethod the Link account’s email', async (t) => {
  const harness = await startHarness(t);
  const session = await harness.stripe.checkout.sessions.create(sessionIn('usd'));
  const paid = await pay(harness, session.id, 'succeeded', {
    paymentMethod: { type: 'link', email: 'ada@example.com' },
  });
  t.is(paid.status, 200);
  t.is(paid.session.customer_details?.email, 'ada@example.com');

  const { charge, method } = await paidWith(harness, paid.session.payment_intent as string);
  t.deepEqual(charge.payment_method_details, { type: 'link', link: { country: 'US' } });
  t.is(charge.billing_details.email, 'ada@example.com');
  t.is(method.type, 'link');
  t.deepEqual(method.link, { email: 'ada@example.com' });
  t.is(method.card, undefined);
});

test('without an email Link is the session’s buyer: customer_email, else an address of the session’s own', async (t) => {
  const harness = await startHarness(t);
  const emailOf = async (sessionId: string): Promise<string | null | undefined> => {
    const paid = await pay(harness, sessionId, 'succeeded', { paymentMethod: { type: 'link' } });
    return (await paidWith(harness, paid.session.payment_intent as string)).method.link?.email;
  };
  const named = await harness.stripe.checkout.sessions.create(sessionIn('usd', { customer_email: 'bo@example.com' }));
  t.is(await emailOf(named.id), 'bo@example.com');

  const [first, second] = await Promise.all([
    harness.stripe.checkout.sessions.create(sessionIn('usd')),
    harness.stripe.checkout.sessions.create(sessionIn('usd')),
  ]);
  const declined = await pay(harness, first.id, 'declined', { paymentMethod: { type: 'link' } });
  t.is(declined.status, 200);
  const declinedIntent = await harness.stripe.paymentIntents.retrieve(declined.session.payment_intent as string);
  t.is(declinedIntent.last_payment_error?.payment_method_type, 'link');
  const firstEmail = await emailOf(first.id);
  t.regex(firstEmail ?? '', /^link-[a-z0-9]{16}@example\.com$/);
  t.not(await emailOf(second.id), firstEmail);

  const other = await harness.stripe.checkout.sessions.create(sessionIn('usd', { customer_email: 'bo@example.com' }));
  const mismatch = await pay(harness, other.id, 'succeeded', {
    paymentMethod: { type: 'link', email: 'someone@example.com' },
  });
  t.is(mismatch.status, 400);
  t.is(mismatch.problem.code, 'invalid_payment_method');
});

test('default fingerprints: the same for one method on every try of a session, another for another method', async (t) => {
  const harness = await startHarness(t);
  const session = await harness.stripe.checkout.sessions.create(sessionIn('usd'));
  const fingerprintOf = async (): Promise<string | null | undefined> => {
    const intent = (await harness.stripe.checkout.sessions.retrieve(session.id)).payment_intent as string;
    const { charge } = await paidWith(harness, intent);
    const details = charge.payment_method_details;
    return details?.card?.fingerprint ?? details?.us_bank_account?.fingerprint;
  };
  await pay(harness, session.id, 'declined');
  const card = await fingerprintOf();
  t.regex(card ?? '', /^[A-Za-z0-9]{16}$/);
  await pay(harness, session.id, 'declined', { paymentMethod: { type: 'card' } });
  t.is(await fingerprintOf(), card);

  // The buyer tries their bank account on the same session: the PaymentIntent accepts it.
  const paid = await pay(harness, session.id, 'async_pending', { paymentMethod: { type: 'us_bank_account' } });
  t.is(paid.status, 200);
  const bank = await fingerprintOf();
  t.regex(bank ?? '', /^[A-Za-z0-9]{16}$/);
  t.not(bank, card);
});

test('refunds and disputes of a bank debit say what it was: no card reference, no card network', async (t) => {
  const harness = await startHarness(t);
  const session = await harness.stripe.checkout.sessions.create(sessionIn('eur'));
  await pay(harness, session.id, 'async_pending', { paymentMethod: { type: 'sepa_debit' } });
  const settled = await pay(harness, session.id, 'async_succeeded');
  const intentId = settled.session.payment_intent as string;

  const refund = await harness.stripe.refunds.create({ payment_intent: intentId, amount: 500 });
  t.deepEqual(refund.destination_details, { type: 'sepa_debit' });
  const failed = await harness.control<Stripe.Refund>('POST', `/_emulator/refunds/${refund.id}/fail`);
  t.is(failed.body.status, 'failed');

  const opened = await harness.control<Stripe.Dispute>('POST', `/_emulator/payment_intents/${intentId}/dispute`);
  t.is(opened.status, 200);
  t.is(opened.body.payment_method_details, undefined);
  t.is(opened.body.network_reason_code, null);
});

test('PaymentMethods are kept in the state file with the charges that name them', async (t) => {
  const stateFile = tempStateFile(t);
  const first = await startHarness(t, { stateFile });
  const session = await first.stripe.checkout.sessions.create(sessionIn('gbp'));
  const paid = await pay(first, session.id, 'async_pending', {
    paymentMethod: { type: 'bacs_debit', fingerprint: 'bacsRestart' },
  });
  const before = await paidWith(first, paid.session.payment_intent as string);
  await first.emulator.close();

  const second = await startHarness(t, { stateFile });
  const after = await paidWith(second, paid.session.payment_intent as string);
  t.deepEqual(after.method, before.method);
  t.is(after.charge.payment_method_details?.bacs_debit?.fingerprint, 'bacsRestart');
  t.deepEqual((await second.stripe.checkout.sessions.retrieve(session.id)).payment_method_types, [
    'card',
    'link',
    'bacs_debit',
  ]);
});
