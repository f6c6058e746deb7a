import test from 'ava';
import { productTerms } from '../../../helpers/fixtures';
import { paymentRulesApply } from '../../../../vocabulary/rules';
import { checkoutPaymentMethods, PAYMENT_RULES } from '../../../../store/rules';
import { paymentMethodKey } from '../../../../store/rules/per-payment-method';

// The purchase rules' parts that need no claims: how a payment method is keyed, which rules a
// product's terms switch on, and what Checkout may offer. (Against Postgres's claims:
// test/store/rules/rules.test.ts.)

const terms = productTerms;

test('a payment method is keyed by its type and fingerprint; a card by its bare fingerprint; none without one', (t) => {
  t.is(paymentMethodKey({ type: 'card', fingerprint: 'fp1' }), 'fp1');
  t.is(paymentMethodKey({ type: 'sepa_debit', fingerprint: 'fp1' }), 'sepa_debit:fp1');
  t.is(paymentMethodKey({ type: 'us_bank_account', fingerprint: 'fp1' }), 'us_bank_account:fp1');
  t.is(paymentMethodKey({ type: 'link' }), null);
});

test('the payment is read only for a product with a rule that reads it', (t) => {
  t.false(paymentRulesApply(undefined));
  t.false(paymentRulesApply(terms({ shippingCountries: ['DE'] })));
  t.true(paymentRulesApply(terms({ maxPerCard: 1 })));
  t.true(paymentRulesApply(terms({ maxPerAddress: 2 })));
});

test('every rule applies only to products whose terms switch it on', (t) => {
  const none = terms({});
  t.deepEqual(
    PAYMENT_RULES.filter((r) => r.appliesTo(none)).map((r) => r.name),
    [],
  );
  const all = terms({ maxPerCard: 1, maxPerAddress: 1, shippingCountries: ['US'] });
  t.deepEqual(
    PAYMENT_RULES.filter((r) => r.appliesTo(all)).map((r) => r.name),
    ['shipping_country', 'per_payment_method', 'per_address'],
  );
});

test('Checkout is offered only the methods every preventing rule allows', (t) => {
  t.is(checkoutPaymentMethods(terms({})), undefined);
  t.false(checkoutPaymentMethods(terms({ maxPerCard: 1 }))!.includes('link'));
  t.deepEqual(checkoutPaymentMethods(terms({ rules: { acceptedPaymentMethods: ['card', 'link'] } })), ['card', 'link']);
  t.deepEqual(checkoutPaymentMethods(terms({ maxPerCard: 1, rules: { acceptedPaymentMethods: ['card', 'link'] } })), [
    'card',
  ]);
  // Together they allow nothing: Checkout is not restricted, and the payment is refused instead.
  t.is(checkoutPaymentMethods(terms({ maxPerCard: 1, rules: { acceptedPaymentMethods: ['link'] } })), undefined);
});
