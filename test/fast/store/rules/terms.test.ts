import Ajv from 'ajv';
import test from 'ava';
import { productTerms } from '../../../helpers/fixtures';
import type { ProductTerms } from '../../../../vocabulary';
import { PAYMENT_RULES, RULE_TERM_SCHEMAS, splitRuleTerms, type RuleCase } from '../../../../store/rules';
import type { Db } from '../../../../store/db';

// The rules' own product terms (store/rules/): which fields of a product are a rule's, what each
// term's schema accepts, and the rules that judge without a claim (shipping country, accepted
// methods). (Those that count claims: test/store/rules/rules.test.ts.)

const terms = productTerms;
const noDb = new Proxy({}, { get: () => () => Promise.reject(new Error('this rule must not query')) }) as Db;
const rule = (name: string) => PAYMENT_RULES.find((r) => r.name === name)!;
const paid = (t: Partial<ProductTerms>, evidence: RuleCase['evidence']): RuleCase => ({
  purchaseId: 'pur_1',
  sku: 'SKU-1',
  quantity: 1,
  terms: terms(t),
  evidence,
});

test('a product’s fields split into its own and the rules’ terms, which leave out what is unset', (t) => {
  t.deepEqual(Object.keys(RULE_TERM_SCHEMAS), ['acceptedPaymentMethods']);
  const fields = { sku: 'SKU-1', priceCents: 100, maxPerCard: 2, acceptedPaymentMethods: ['card'] };
  t.deepEqual(splitRuleTerms(fields), {
    own: { sku: 'SKU-1', priceCents: 100, maxPerCard: 2 },
    ruleTerms: { acceptedPaymentMethods: ['card'] },
  });
  t.deepEqual(splitRuleTerms({ sku: 'x', acceptedPaymentMethods: null }), { own: { sku: 'x' }, ruleTerms: {} });
  t.deepEqual(splitRuleTerms({}), { own: {}, ruleTerms: {} });
});

test('acceptedPaymentMethods takes 1 to 20 distinct Stripe type names, or null', (t) => {
  const validate = new Ajv({ strict: false }).compile(RULE_TERM_SCHEMAS.acceptedPaymentMethods);
  for (const ok of [['card'], ['card', 'sepa_debit', 'us_bank_account'], null])
    t.true(validate(ok), JSON.stringify(ok));
  const many = Array.from({ length: 21 }, (_, i) => `m${String.fromCharCode(97 + i)}`);
  for (const bad of [[], ['card', 'card'], ['Card'], ['c'], ['card-present'], many, 'card', [1]]) {
    t.false(validate(bad), JSON.stringify(bad));
  }
});

test('a payment shipped outside the product’s countries is refused, in any case; no address collected passes', async (t) => {
  const shipping = rule('shipping_country');
  const refusal = await shipping.judge(noDb, paid({ shippingCountries: ['de', 'FR'] }, { shippingCountry: 'us' }));
  t.deepEqual(refusal, {
    rule: 'shipping_country',
    kind: 'refunded_shipping_country',
    reason: 'SKU-1 ships only to DE, FR, not to US',
  });
  t.is(await shipping.judge(noDb, paid({ shippingCountries: ['DE'] }, { shippingCountry: 'de' })), null);
  t.is(await shipping.judge(noDb, paid({ shippingCountries: ['DE'] }, {})), null);
});

test('a payment by a method the product is not sold for is refused; one Stripe did not describe is not', async (t) => {
  const accepted = rule('accepted_payment_methods');
  const only = { rules: { acceptedPaymentMethods: ['card', 'link'] } };
  t.true(accepted.appliesTo(terms(only)));
  t.false(accepted.appliesTo(terms({ rules: { acceptedPaymentMethods: 'card' } })), 'a term that is no list');
  t.like(await accepted.judge(noDb, paid(only, { method: { type: 'sepa_debit', fingerprint: 'x' } })), {
    kind: 'refunded_payment_method',
    reason: 'SKU-1 is sold for payment by card, link only, not by sepa_debit',
  });
  t.is(await accepted.judge(noDb, paid(only, { method: { type: 'link' } })), null);
  t.is(await accepted.judge(noDb, paid(only, {})), null);
});

test('per-payment-method and per-address rules pass, without a claim, a payment with nothing to count', async (t) => {
  t.is(await rule('per_payment_method').judge(noDb, paid({ maxPerCard: 1 }, {})), null);
  t.is(await rule('per_address').judge(noDb, paid({ maxPerAddress: 1 }, { shippingCountry: 'US' })), null);
  t.like(await rule('per_payment_method').judge(noDb, paid({ maxPerCard: 2 }, { method: { type: 'klarna' } })), {
    kind: 'refunded_card_limit',
    reason:
      'limit per payment method: a klarna payment cannot be counted against the limit of SKU-1 (2 per card or bank account); pay by card or bank debit',
  });
});
