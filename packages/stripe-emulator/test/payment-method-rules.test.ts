import test from 'ava';
import Stripe from 'stripe';

import { type EmulatorEvents, pay, sessionParams, startHarness } from './harness';

// Which methods a session offers and which the pay control refuses: what Stripe's hosted page would
// not offer, and outcomes Stripe does not produce for a method.

function sessionIn(currency: string, extra: Record<string, unknown> = {}): Stripe.Checkout.SessionCreateParams {
  return sessionParams({
    line_items: [{ quantity: 1, price_data: { currency, unit_amount: 2500, product_data: { name: 'Sneaker' } } }],
    ...extra,
  });
}

test('a session offers card, Link and the bank debit of its currency, as the account’s dynamic methods', async (t) => {
  const { stripe } = await startHarness(t);
  const offered = async (currency: string, extra: Record<string, unknown> = {}) =>
    (await stripe.checkout.sessions.create(sessionIn(currency, extra))).payment_method_types;
  t.deepEqual(await offered('usd'), ['card', 'link', 'us_bank_account']);
  t.deepEqual(await offered('eur'), ['card', 'link', 'sepa_debit']);
  t.deepEqual(await offered('gbp'), ['card', 'link', 'bacs_debit']);
  t.deepEqual(await offered('jpy'), ['card', 'link']);

  const allowed = await stripe.checkout.sessions.create(
    sessionIn('eur', { allowed_payment_method_types: ['card', 'sepa_debit', 'us_bank_account', 'klarna'] }),
  );
  t.deepEqual(allowed.payment_method_types, ['card', 'sepa_debit']);
  t.deepEqual(allowed.allowed_payment_method_types, ['card', 'sepa_debit', 'us_bank_account', 'klarna']);
  const excluded = await stripe.checkout.sessions.create(
    sessionIn('usd', { excluded_payment_method_types: ['us_bank_account'] }),
  );
  t.deepEqual(excluded.payment_method_types, ['card', 'link']);
  t.deepEqual(excluded.excluded_payment_method_types, ['us_bank_account']);
  // The list of versions before 2026-09-30 (stripe-node no longer types it).
  t.deepEqual(await offered('eur', { payment_method_types: ['sepa_debit'] }), ['sepa_debit']);
});

test('a session create whose methods cannot be offered is refused as Stripe refuses it', async (t) => {
  const { stripe } = await startHarness(t);
  const refusal = async (currency: string, extra: Record<string, unknown>) => {
    const error = await t.throwsAsync(stripe.checkout.sessions.create(sessionIn(currency, extra)));
    t.true(error instanceof Stripe.errors.StripeInvalidRequestError, String(error));
    return error as Stripe.errors.StripeInvalidRequestError;
  };
  const wrongCurrency = await refusal('usd', { payment_method_types: ['card', 'sepa_debit'] });
  t.is(wrongCurrency.param, 'payment_method_types[1]');
  t.regex(wrongCurrency.message, /sepa_debit, which only supports eur/);
  t.is((await refusal('usd', { payment_method_types: ['klarna'] })).param, 'payment_method_types[0]');
  t.regex((await refusal('usd', { allowed_payment_method_types: ['sepa_debit'] })).message, /No payment method type/);
  const none = {
    allowed_payment_method_types: ['card', 'bacs_debit'],
    excluded_payment_method_types: ['card', 'bacs_debit'],
  };
  t.regex((await refusal('gbp', none)).message, /in gbp: the account offers card, link, bacs_debit/);
  t.is((await refusal('usd', { excluded_payment_method_types: ['Card!'] })).param, 'excluded_payment_method_types[0]');
  t.is((await refusal('usd', { excluded_payment_method_types: ['link'] })).param, 'excluded_payment_method_types[0]');
});

test('the pay control refuses a method the session does not offer, and nothing happens', async (t) => {
  const harness = await startHarness(t);
  const session = await harness.stripe.checkout.sessions.create(sessionIn('usd'));
  const sepa = await pay(harness, session.id, 'async_pending', { paymentMethod: { type: 'sepa_debit' } });
  t.is(sepa.status, 400);
  t.is(sepa.problem.code, 'payment_method_not_offered');
  t.regex(sepa.problem.detail, /offers card, link, us_bank_account, not sepa_debit \(sepa_debit takes only eur/);

  const cardOnly = await harness.stripe.checkout.sessions.create(
    sessionIn('usd', { allowed_payment_method_types: ['card'] }),
  );
  const link = await pay(harness, cardOnly.id, 'succeeded', { paymentMethod: { type: 'link' } });
  t.is(link.status, 400);
  t.is(link.problem.code, 'payment_method_not_offered');

  for (const id of [session.id, cardOnly.id]) {
    const after = await harness.stripe.checkout.sessions.retrieve(id);
    t.is(after.status, 'open');
    t.is(after.payment_intent, null);
  }
  t.deepEqual((await harness.control<EmulatorEvents>('GET', '/_emulator/events')).body.data, []);
});

test('a bank debit neither succeeds nor is declined at once: only the delayed path', async (t) => {
  const harness = await startHarness(t);
  const session = await harness.stripe.checkout.sessions.create(sessionIn('eur'));
  for (const outcome of ['succeeded', 'declined']) {
    const refused = await pay(harness, session.id, outcome, { paymentMethod: { type: 'sepa_debit' } });
    t.is(refused.status, 400, outcome);
    t.is(refused.problem.code, 'payment_method_delayed');
    t.regex(refused.problem.detail, /async_pending/);
  }
  t.is((await harness.stripe.checkout.sessions.retrieve(session.id)).payment_intent, null);
  // A card can still take the delayed path, as the emulator's older tests make it do.
  t.is((await pay(harness, session.id, 'async_pending', { paymentMethod: { type: 'card' } })).status, 200);
});

test('a malformed paymentMethod, or one on an outcome that makes no charge, is a problem', async (t) => {
  const harness = await startHarness(t);
  const session = await harness.stripe.checkout.sessions.create(sessionIn('usd'));
  for (const paymentMethod of [
    'card',
    { fingerprint: 'abc' },
    { type: 'klarna' },
    { type: 'card', fingerprint: 'has spaces' },
    { type: 'card', cvc: '123' },
    { type: 'card', email: 'ada@example.com' },
    { type: 'link', fingerprint: 'abc' },
    { type: 'link', email: 'not an email' },
  ]) {
    const refused = await pay(harness, session.id, 'succeeded', { paymentMethod });
    t.is(refused.status, 400, JSON.stringify(paymentMethod));
    t.is(refused.problem.code, 'invalid_payment_method', JSON.stringify(paymentMethod));
  }
  const both = await pay(harness, session.id, 'succeeded', {
    card: { fingerprint: 'abc' },
    paymentMethod: { type: 'card' },
  });
  t.is(both.status, 400);
  t.is(both.problem.code, 'invalid_card');

  await pay(harness, session.id, 'async_pending', { paymentMethod: { type: 'us_bank_account' } });
  const settling = await pay(harness, session.id, 'async_succeeded', { paymentMethod: { type: 'us_bank_account' } });
  t.is(settling.status, 400);
  t.is(settling.problem.code, 'invalid_payment_method');
});

test('the hosted page offers Link and the session’s bank debit, and pays with them', async (t) => {
  const harness = await startHarness(t);
  const { stripe, emulator } = harness;
  const submit = async (sessionId: string, button: RegExp, outcome: string): Promise<Stripe.Charge> => {
    const html = await (await fetch(`${emulator.url}/checkout/${sessionId}`)).text();
    const action = button.exec(html)?.[1];
    if (!action) throw new Error(`no ${button} on the page:\n${html}`);
    const res = await fetch(`${emulator.url}${action}`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
      body: `outcome=${outcome}`,
      redirect: 'manual',
    });
    t.is(res.status, 303);
    const intent = (await stripe.checkout.sessions.retrieve(sessionId)).payment_intent as string;
    return (await stripe.paymentIntents.retrieve(intent, { expand: ['latest_charge'] })).latest_charge as Stripe.Charge;
  };
  const sepaButton = /id="pay-async" class="secondary" formaction="([^"]+)">Pay by SEPA Direct Debit/;
  const eur = await stripe.checkout.sessions.create(sessionIn('eur'));
  t.is((await submit(eur.id, sepaButton, 'async_pending')).payment_method_details?.type, 'sepa_debit');

  const linkButton = /id="pay-link" class="secondary" formaction="([^"]+)">Pay with Link/;
  const usd = await stripe.checkout.sessions.create(sessionIn('usd'));
  t.is((await submit(usd.id, linkButton, 'succeeded')).payment_method_details?.type, 'link');

  // A session that offers no bank debit keeps the delayed card payment the page had before.
  const yen = await stripe.checkout.sessions.create(sessionIn('jpy'));
  const page = await (await fetch(`${emulator.url}/checkout/${yen.id}`)).text();
  t.regex(page, /id="pay-async" class="secondary">Pay by card, settling later/);
});
