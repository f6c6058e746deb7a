import test from 'ava';
import type Stripe from 'stripe';
import { createPaymentEvidenceSteps, paymentMethodOf } from '../../../activities/payment-evidence';
import { addressKey } from '../../../store/addresses';

// What the purchase rules read of a paid session (activities/payment-evidence.ts): the method that
// paid and its fingerprint, and the shipping address as a key, from one retrieve of the session.

const ADDRESS = { line1: '350 Fifth Avenue', city: 'New York', state: 'NY', postal_code: '10118', country: 'US' };

/** A stripe-node stand-in whose session retrieve answers `session` and records its arguments. */
function withSession(session: unknown) {
  const calls: unknown[][] = [];
  const stripe = {
    checkout: {
      sessions: {
        retrieve: async (...args: unknown[]) => {
          calls.push(args);
          return session;
        },
      },
    },
  } as unknown as Stripe;
  return { steps: createPaymentEvidenceSteps({ stripe }), calls };
}

const charge = (details: object) => ({ payment_method_details: details }) as unknown as Stripe.Charge;

test('the method that paid is its type with the fingerprint kept under that type, or none', (t) => {
  t.deepEqual(paymentMethodOf(charge({ type: 'card', card: { fingerprint: 'fp_card' } })), {
    type: 'card',
    fingerprint: 'fp_card',
  });
  t.deepEqual(paymentMethodOf(charge({ type: 'sepa_debit', sepa_debit: { fingerprint: 'fp_iban' } })), {
    type: 'sepa_debit',
    fingerprint: 'fp_iban',
  });
  t.deepEqual(paymentMethodOf(charge({ type: 'link', link: {} })), { type: 'link' }, 'Link carries no fingerprint');
  t.deepEqual(paymentMethodOf(charge({ type: 'card', card: { fingerprint: null } })), { type: 'card' });
  t.is(paymentMethodOf(null), undefined);
  t.is(paymentMethodOf({ payment_method_details: null } as unknown as Stripe.Charge), undefined);
});

test('readPaymentEvidence retrieves the session once with its charge expanded, and gives keys, not the address', async (t) => {
  const { steps, calls } = withSession({
    payment_intent: {
      id: 'pi_1',
      latest_charge: { payment_method_details: { type: 'card', card: { fingerprint: 'fp' } } },
    },
    collected_information: { shipping_details: { address: ADDRESS } },
  });
  const evidence = await steps.readPaymentEvidence('cs_1');
  t.deepEqual(calls, [['cs_1', { expand: ['payment_intent.latest_charge'] }]]);
  t.deepEqual(evidence, {
    paymentIntentId: 'pi_1',
    method: { type: 'card', fingerprint: 'fp' },
    addressKey: addressKey(ADDRESS),
    shippingCountry: 'US',
  });
  t.false(JSON.stringify(evidence).includes('Fifth'), 'no address reaches the history');
});

test('a session paid without a charge or an address shows only what it has', async (t) => {
  const unexpanded = withSession({ payment_intent: 'pi_2', collected_information: null });
  t.deepEqual(await unexpanded.steps.readPaymentEvidence('cs_2'), { paymentIntentId: 'pi_2' });
  const nothing = withSession({ payment_intent: null });
  t.deepEqual(await nothing.steps.readPaymentEvidence('cs_3'), {});
});

test('shippingAddressKey is the key of the address collected, or null when none was', async (t) => {
  const shipped = withSession({ collected_information: { shipping_details: { address: ADDRESS } } });
  t.is(await shipped.steps.shippingAddressKey('cs_1'), addressKey(ADDRESS));
  t.deepEqual(shipped.calls, [['cs_1']]);
  t.is(await withSession({ collected_information: null }).steps.shippingAddressKey('cs_2'), null);
});

test('a Stripe failure reading the payment is classified like every Stripe call', async (t) => {
  const stripe = {
    checkout: {
      sessions: { retrieve: () => Promise.reject(Object.assign(new Error('no such session'), { statusCode: 404 })) },
    },
  } as unknown as Stripe;
  await t.throwsAsync(createPaymentEvidenceSteps({ stripe }).readPaymentEvidence('cs_x'), {
    message: /^reading the payment: Stripe answered 404: no such session/,
  });
});
