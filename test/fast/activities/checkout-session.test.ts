import { fc, testProp } from '@fast-check/ava';
import test from 'ava';
import {
  reservedUntilText,
  sessionExpiry,
  sessionRequest,
  type OpenCheckoutInput,
} from '../../../activities/checkout-session';

// The Checkout Session's expiry and request (activities/checkout-session.ts): Stripe takes an expiry
// 30 minutes to 24 hours ahead, so a short hold gets Stripe's minimum (with room for retries) and a
// long one the hold's end, and a retried attempt sends the very same request.

const MINUTE = 60_000;
const NOW = Date.parse('2030-01-01T12:00:00.000Z');
const input: OpenCheckoutInput = {
  purchaseId: 'pur 1/ä',
  sku: 'SNEAKER-42',
  buyerId: 'buyer-7',
  quantity: 1,
  productName: 'Sneaker',
  unitAmountCents: 12_500,
  currency: 'usd',
  holdExpiresAt: new Date(NOW + 10 * MINUTE).toISOString(),
  holdSeconds: 600,
};
const urls = { successUrl: 'https://shop.example/p/{purchaseId}', cancelUrl: 'https://shop.example/c?p={purchaseId}' };

test('a 10-minute hold gets a session of Stripe’s 30 minutes plus 5 for the retries', (t) => {
  t.is(sessionExpiry(input.holdExpiresAt, NOW).toISOString(), '2030-01-01T12:35:00.000Z');
});

test('a one-hour hold gets the hold’s end, even when the session waited 20 minutes for the budget', (t) => {
  const holdEnd = new Date(NOW + 60 * MINUTE).toISOString();
  t.is(sessionExpiry(holdEnd, NOW).toISOString(), holdEnd);
  t.is(sessionExpiry(holdEnd, NOW + 20 * MINUTE).toISOString(), holdEnd);
  t.is(sessionExpiry(holdEnd, NOW + 40 * MINUTE).toISOString(), '2030-01-01T13:15:00.000Z', 'too late: the minimum');
});

testProp(
  'the expiry is whole seconds, at least 35 minutes from now and never before the hold’s end',
  [fc.integer({ min: -3_600_000, max: 86_400_000 }), fc.integer({ min: 0, max: 999_999 })],
  (t, holdFromNowMs, jitterMs) => {
    const now = NOW + jitterMs;
    const holdEnd = now + holdFromNowMs;
    const expiry = sessionExpiry(new Date(holdEnd).toISOString(), now).getTime();
    t.is(expiry % 1000, 0);
    t.true(expiry >= now + 35 * MINUTE, 'Stripe’s minimum, with room for the retries');
    t.true(expiry >= holdEnd, 'never before the hold ends');
    t.true(expiry - Math.max(holdEnd, now + 35 * MINUTE) < 1000, 'no later than needed');
  },
);

test('the text above Pay names the hold’s end in UTC, and several units as them', (t) => {
  t.is(
    reservedUntilText(input),
    'Sneaker is reserved for you until 12:10 UTC. Pay before then to keep it: a payment made later is refunded if nothing is left by then.',
  );
  t.regex(reservedUntilText({ ...input, quantity: 3 }), /^3 × Sneaker are reserved .* to keep them:/);
  t.is(reservedUntilText({ ...input, productName: 'x'.repeat(2000) }).length, 1200, 'Stripe’s limit');
});

test('the request is the same for the same expiry, names the purchase, and fills the return URLs', (t) => {
  const expiresAt = sessionExpiry(input.holdExpiresAt, NOW);
  const request = sessionRequest(input, expiresAt, urls);
  t.deepEqual(sessionRequest(input, new Date(expiresAt), urls), request);
  t.like(request, {
    mode: 'payment',
    expires_at: expiresAt.getTime() / 1000,
    client_reference_id: input.purchaseId,
    metadata: { purchase_id: input.purchaseId, sku: 'SNEAKER-42', buyer_id: 'buyer-7' },
    payment_intent_data: { metadata: { purchase_id: input.purchaseId, sku: 'SNEAKER-42' } },
    success_url: 'https://shop.example/p/pur%201%2F%C3%A4',
    cancel_url: 'https://shop.example/c?p=pur%201%2F%C3%A4',
  });
  t.false('allowed_payment_method_types' in request);
  t.false('shipping_address_collection' in request);
});

test('shipping countries and payment methods are sent only when the product has them', (t) => {
  const expiresAt = sessionExpiry(input.holdExpiresAt, NOW);
  const request = sessionRequest(
    { ...input, shippingCountries: ['DE', 'FR'], paymentMethodTypes: ['card'] },
    expiresAt,
    urls,
  );
  t.deepEqual(request.shipping_address_collection, { allowed_countries: ['DE', 'FR'] });
  t.deepEqual(request.allowed_payment_method_types, ['card']);
  const empty = sessionRequest({ ...input, shippingCountries: [], paymentMethodTypes: [] }, expiresAt, urls);
  t.false('shipping_address_collection' in empty || 'allowed_payment_method_types' in empty);
});
