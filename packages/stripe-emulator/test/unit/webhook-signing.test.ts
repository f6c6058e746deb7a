import test from 'ava';
import Stripe from 'stripe';
import { signWebhookPayload } from '../../src/webhooks';

// The emulator signs its webhooks as Stripe does: stripe-node's own check accepts them, and refuses
// one signed with another secret. No stripe-mock needed.

const WEBHOOK_SECRET = 'whsec_contract_test_secret';
const stripe = new Stripe('sk_test_123');

test('a payload signed by the emulator verifies with stripe-node constructEvent', (t) => {
  const payload = JSON.stringify({
    id: 'evt_contract_1',
    object: 'event',
    type: 'checkout.session.completed',
    created: Math.floor(Date.now() / 1000),
    data: { object: { id: 'cs_test_contract', object: 'checkout.session', client_reference_id: 'p-1' } },
  });
  const timestamp = Math.floor(Date.now() / 1000);
  const header = signWebhookPayload(payload, WEBHOOK_SECRET, timestamp);

  const event = stripe.webhooks.constructEvent(payload, header, WEBHOOK_SECRET);
  t.is(event.id, 'evt_contract_1');
  t.is(event.type, 'checkout.session.completed');
  // Byte for byte the header stripe-node itself computes for the same payload, secret and time.
  t.is(header, stripe.webhooks.generateTestHeaderString({ payload, secret: WEBHOOK_SECRET, timestamp }));
});

test('a payload the emulator signed with another secret fails stripe-node verification', (t) => {
  const payload = JSON.stringify({ id: 'evt_contract_2', object: 'event', type: 'checkout.session.expired' });
  const header = signWebhookPayload(payload, 'whsec_someone_else', Math.floor(Date.now() / 1000));

  const error = t.throws(() => stripe.webhooks.constructEvent(payload, header, WEBHOOK_SECRET));
  t.is((error as unknown as { type?: string }).type, 'StripeSignatureVerificationError');
});
