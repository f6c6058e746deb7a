import test from 'ava';
import type { PaymentMethodChoice } from '@flash-sale/stripe-emulator';
import { createStripe } from '../../config/clients';
import { assertInvariants } from '../helpers/db';
import { sessionOf, startSystem, type System } from '../helpers/system';

// The limit per payment method (`maxPerCard`) counts whatever paid by the fingerprint Stripe gives
// it: a bank account paying by SEPA debit as a card is counted, and a method Stripe gives no
// fingerprint (Link) is never taken as within the limit. The rules read the payment once.

let sys: System;
test.before(async () => {
  sys = await startSystem();
});
test.after.always(async () => {
  await sys?.close();
});

const ended = (r: { status: string }) => ['confirmed', 'refunded', 'payment_failed'].includes(r.status);

async function notificationKinds(purchaseId: string): Promise<string[]> {
  const { rows } = await sys.db.query<{ kind: string }>('SELECT kind FROM notifications WHERE purchase_id = $1', [
    purchaseId,
  ]);
  return rows.map((r) => r.kind);
}

/** A bank debit as the buyer makes it: completed (settling), then settled. */
async function payByDebit(purchaseId: string, paymentMethod: PaymentMethodChoice) {
  const session = await sessionOf(sys.db, purchaseId);
  const started = await sys.pay(session, 'async_pending', { paymentMethod });
  if (started.status !== 200) throw new Error(`paying: ${started.status} ${JSON.stringify(started.body)}`);
  const settled = await sys.pay(session, 'async_succeeded');
  if (settled.status !== 200) throw new Error(`settling: ${settled.status} ${JSON.stringify(settled.body)}`);
}

test('two payments by one bank account (SEPA debit) where the limit per payment method is 1: the second refunded with the reason', async (t) => {
  const sku = await sys.createProduct({ stock: 5, maxPerPaymentMethod: 1, currency: 'eur' });
  const first = await sys.buy(sku, 'sepa-ann');
  const second = await sys.buy(sku, 'sepa-ben');
  const other = await sys.buy(sku, 'sepa-cat');
  const shared = { type: 'sepa_debit', fingerprint: 'fp-bank-shared' } as const;
  await payByDebit(first.body.purchaseId, shared);
  t.is((await sys.waitForPurchase(first.body.purchaseId, ended)).status, 'confirmed');
  await payByDebit(second.body.purchaseId, shared);
  await payByDebit(other.body.purchaseId, { type: 'sepa_debit', fingerprint: 'fp-bank-other' });

  const refused = await sys.waitForPurchase(second.body.purchaseId, ended);
  t.is(refused.status, 'refunded', JSON.stringify(refused));
  t.regex(refused.reason, /limit per payment method: this payment method already bought the most/);
  t.like(await sys.waitForPurchase(second.body.purchaseId, (r) => r.refund_status === 'succeeded'), {
    refund_status: 'succeeded',
  });
  t.deepEqual(await notificationKinds(second.body.purchaseId), ['refunded_card_limit']);
  t.is((await sys.waitForPurchase(other.body.purchaseId, ended)).status, 'confirmed');
  // A bank account and a card are counted apart: the key names the method's type.
  const { rows } = await sys.db.query<{ fingerprint: string }>(
    'SELECT fingerprint FROM card_claims WHERE sku = $1 ORDER BY fingerprint',
    [sku],
  );
  t.deepEqual(
    rows.map((r) => r.fingerprint),
    ['sepa_debit:fp-bank-other', 'sepa_debit:fp-bank-shared'],
  );
  t.like(await sys.stock(sku), { sold: 2, held: 0, available: 3 });
  await assertInvariants(t, sys.db, sku);
});

/** The payment methods the emulator's Checkout Session offers. */
async function offered(sessionId: string): Promise<string[]> {
  const stripe = createStripe({ stripeSecretKey: 'sk_test_emulator', stripeApiUrl: sys.emulator.url });
  return (await stripe.checkout.sessions.retrieve(sessionId)).payment_method_types;
}

test('Checkout does not offer Link (no fingerprint) for a product with the limit per payment method, and a card pays', async (t) => {
  const sku = await sys.createProduct({ stock: 5, maxPerPaymentMethod: 1 });
  const bought = await sys.buy(sku, 'link-dan');
  const session = await sessionOf(sys.db, bought.body.purchaseId);
  const methods = await offered(session);
  t.false(methods.includes('link'), methods.join(', '));
  t.true(methods.includes('card'), methods.join(', '));
  const refused = await sys.pay(session, 'succeeded', { paymentMethod: { type: 'link' } });
  t.is(refused.status, 400, JSON.stringify(refused.body));
  t.is(refused.body.code, 'payment_method_not_offered', JSON.stringify(refused.body));
  await sys.pay(session, 'succeeded', { card: { fingerprint: 'fp-dan' } });
  t.is((await sys.waitForPurchase(bought.body.purchaseId, ended)).status, 'confirmed');
  const { rows } = await sys.db.query('SELECT purchase_id, fingerprint FROM card_claims WHERE sku = $1', [sku]);
  t.deepEqual(rows, [{ purchase_id: bought.body.purchaseId, fingerprint: 'fp-dan' }]);
  await assertInvariants(t, sys.db, sku);
});

test('a product sold for card payments only is offered by card only; a card pays', async (t) => {
  const sku = await sys.createProduct({ stock: 5, acceptedPaymentMethods: ['card'] });
  const bought = await sys.buy(sku, 'only-card-gus');
  const session = await sessionOf(sys.db, bought.body.purchaseId);
  t.deepEqual(await offered(session), ['card']);
  const refused = await sys.pay(session, 'succeeded', { paymentMethod: { type: 'link' } });
  t.is(refused.status, 400, JSON.stringify(refused.body));
  await sys.pay(session, 'succeeded');
  t.is((await sys.waitForPurchase(bought.body.purchaseId, ended)).status, 'confirmed');
  t.like(await sys.stock(sku), { sold: 1, held: 0, available: 4 });
  await assertInvariants(t, sys.db, sku);
});

/** Requests the emulator served, by endpoint (method and path, ids left out). */
async function stripeReads(): Promise<Record<string, number>> {
  const report = (await sys.emulatorCall('GET', '/_emulator/rate-limits')).body as {
    endpoints: { endpoint: string; served: number }[];
  };
  return Object.fromEntries(report.endpoints.map((e) => [e.endpoint, e.served]));
}

test.serial('the rules of a product with both limits read the paid session from Stripe once', async (t) => {
  const sku = await sys.createProduct({
    stock: 5,
    maxPerPaymentMethod: 2,
    maxPerAddress: 2,
    shippingCountries: ['US'],
  });
  const bought = await sys.buy(sku, 'reads-hal');
  const session = await sessionOf(sys.db, bought.body.purchaseId);
  const before = await stripeReads();
  const address = { line1: '1 Main St', city: 'Springfield', postal_code: '62701', country: 'US' };
  await sys.pay(session, 'succeeded', { shipping: { name: 'Hal', address } });
  t.is((await sys.waitForPurchase(bought.body.purchaseId, ended)).status, 'confirmed');
  const after = await stripeReads();
  const delta = (endpoint: string) => (after[endpoint] ?? 0) - (before[endpoint] ?? 0);
  const reads = {
    sessions: delta('GET /v1/checkout/sessions/:id'),
    paymentIntents: delta('GET /v1/payment_intents/:id'),
  };
  t.log(`Stripe reads for the rules of one paid saga: ${JSON.stringify(reads)}`);
  t.deepEqual(reads, { sessions: 1, paymentIntents: 0 });
  await assertInvariants(t, sys.db, sku);
});
