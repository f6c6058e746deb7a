import { randomUUID } from 'node:crypto';
import test from 'ava';
import { productTerms } from '../../helpers/fixtures';
import type { ProductTerms } from '../../../vocabulary';
import type { PaymentEvidence } from '../../../vocabulary/rules';
import { judgePayment } from '../../../store/rules';
import { testDb, uniqueSku } from '../../helpers/db';

// The purchase rules against Postgres's claims: each rule in isolation, then the module's order and
// its promise that a refused payment counts against no limit. (What needs no Postgres:
// test/fast/store/rules/rules.test.ts.)

const db = testDb(4);
test.after.always(() => db.end());

const terms = productTerms;

const paid = (sku: string, t: Partial<ProductTerms>, evidence: PaymentEvidence) => ({
  purchaseId: `pur_${randomUUID().slice(0, 12)}`,
  sku,
  quantity: 1,
  terms: terms(t),
  evidence,
});

test('a bank account and a card with the same fingerprint are counted apart; a second payment of one is refused', async (t) => {
  const sku = uniqueSku('rules-method');
  const limit = { maxPerCard: 1 };
  t.is(await judgePayment(db, paid(sku, limit, { method: { type: 'card', fingerprint: 'same' } })), null);
  t.is(await judgePayment(db, paid(sku, limit, { method: { type: 'sepa_debit', fingerprint: 'same' } })), null);
  const again = await judgePayment(db, paid(sku, limit, { method: { type: 'sepa_debit', fingerprint: 'same' } }));
  t.like(again, { rule: 'per_payment_method', kind: 'refunded_card_limit' });
  t.regex(again!.reason, /this payment method already bought the most/);
});

test('judging one purchase twice (a retried step) answers the same and claims once', async (t) => {
  const sku = uniqueSku('rules-retry');
  const c = paid(sku, { maxPerCard: 1 }, { method: { type: 'card', fingerprint: 'fp-retry' } });
  t.is(await judgePayment(db, c), null);
  t.is(await judgePayment(db, c), null);
  const { rows } = await db.query('SELECT count(*)::int AS n FROM card_claims WHERE sku = $1', [sku]);
  t.is(rows[0].n, 1);
});

test('a payment a later rule refuses keeps no claim of an earlier one', async (t) => {
  const sku = uniqueSku('rules-order');
  const limits = { maxPerCard: 5, maxPerAddress: 1 };
  const first = paid(sku, limits, { method: { type: 'card', fingerprint: 'fp-a' }, addressKey: 'addr-1' });
  t.is(await judgePayment(db, first), null);
  const second = paid(sku, limits, { method: { type: 'card', fingerprint: 'fp-b' }, addressKey: 'addr-1' });
  t.like(await judgePayment(db, second), { rule: 'per_address', kind: 'refunded_address_limit' });
  const { rows } = await db.query('SELECT purchase_id FROM card_claims WHERE sku = $1', [sku]);
  t.deepEqual(
    rows.map((r) => r.purchase_id),
    [first.purchaseId],
  );
});

test('a payment shipped outside the product countries is refused; one with no address collected is not', async (t) => {
  const sku = uniqueSku('rules-country');
  const shipping = { maxPerAddress: 5, shippingCountries: ['DE', 'FR'] };
  const abroad = await judgePayment(db, paid(sku, shipping, { addressKey: 'k1', shippingCountry: 'us' }));
  t.like(abroad, { rule: 'shipping_country', kind: 'refunded_shipping_country' });
  t.regex(abroad!.reason, /ships only to DE, FR, not to US/);
  t.is(await judgePayment(db, paid(sku, shipping, { addressKey: 'k2', shippingCountry: 'FR' })), null);
  t.is(await judgePayment(db, paid(sku, shipping, {})), null);
});

test('a payment by a method with no fingerprint is refused by the limit per payment method, as is one by a method the product is not sold for', async (t) => {
  const sku = uniqueSku('rules-unseen');
  const linked = await judgePayment(db, paid(sku, { maxPerCard: 3 }, { method: { type: 'link' } }));
  t.like(linked, { rule: 'per_payment_method', kind: 'refunded_card_limit' });
  t.regex(linked!.reason, /a link payment cannot be counted against the limit/);
  const only = { rules: { acceptedPaymentMethods: ['card'] } };
  const debit = await judgePayment(db, paid(sku, only, { method: { type: 'sepa_debit', fingerprint: 'x' } }));
  t.like(debit, { rule: 'accepted_payment_methods', kind: 'refunded_payment_method' });
  t.regex(debit!.reason, /is sold for payment by card only, not by sepa_debit/);
  t.is(await judgePayment(db, paid(sku, only, { method: { type: 'card', fingerprint: 'y' } })), null);
});
