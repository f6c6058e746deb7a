import test from 'ava';
import { acceptedPaymentMethods } from '../../../../store/rules/accepted-payment-methods';
import { perPaymentMethod } from '../../../../store/rules/per-payment-method';
import { shippingCountry } from '../../../../store/rules/shipping-country';
import { perPurchaseLimit, refusalInWords, rulesInWords } from '../../../../store/rules';
import type { ProductTerms } from '../../../../vocabulary';

// The purchase rules in the buyer's words (issue 32, item 3): before paying, beside the price; after
// a refusal, the refund's reason naming the product, from the reason each rule itself wrote.

const terms: ProductTerms = {
  name: 'Hoodie',
  priceCents: 8900,
  currency: 'eur',
  holdSeconds: 600,
  hasUnits: false,
  maxPerCard: 2,
  maxPerAddress: 1,
  shippingCountries: ['FR', 'DE'],
  rules: { acceptedPaymentMethods: ['card', 'sepa_debit'] },
};
const hoodie = { sku: 'hoodie-ship', name: 'Hoodie', terms };

test('the rules of a product in words, and the smallest of their caps on one purchase', (t) => {
  t.deepEqual(rulesInWords(terms), [
    'Ships only to France, Germany.',
    'Paid only by card or SEPA debit.',
    'At most 2 per card or bank account, counting earlier orders; pay by card or bank debit.',
    'At most 1 per shipping address, counting earlier orders.',
  ]);
  t.deepEqual(perPurchaseLimit(terms), { max: 1, term: 'maxPerAddress' });
  t.is(perPurchaseLimit({ ...terms, maxPerCard: undefined, maxPerAddress: undefined }), undefined);
});

test("each rule's refusal reads in the buyer's words, naming the product, and no engineer's reason is left", async (t) => {
  const refusals = [
    await shippingCountry.judge(null as never, {
      purchaseId: 'p',
      sku: 'hoodie-ship',
      quantity: 1,
      terms,
      evidence: { shippingCountry: 'US' },
    }),
    await acceptedPaymentMethods.judge(null as never, {
      purchaseId: 'p',
      sku: 'hoodie-ship',
      quantity: 1,
      terms,
      evidence: { method: { type: 'klarna' } },
    }),
    await perPaymentMethod.judge(null as never, {
      purchaseId: 'p',
      sku: 'hoodie-ship',
      quantity: 1,
      terms,
      evidence: { method: { type: 'link' } },
    }),
  ];
  const words = refusals.map((r) => refusalInWords(r!.reason, hoodie));
  t.deepEqual(words, [
    'Hoodie ships only to France, Germany, not to United States',
    'Hoodie can be paid only by card or SEPA debit, not by klarna',
    'Hoodie is limited to 2 per card or bank account, and the way you paid cannot be counted against that (pay by card or bank debit)',
  ]);
  t.is(
    refusalInWords(
      'limit per address: this shipping address already bought the most of hoodie-ship one address may (1)',
      hoodie,
    ),
    'Hoodie is limited to 1 per shipping address, and the address you gave had already bought that many',
  );
  t.is(
    refusalInWords('limit per card: this card already bought the most of hoodie-ship one card may (2)', hoodie),
    'Hoodie is limited to 2 per card or bank account, and the one you paid with had already bought that many',
  );
  t.is(refusalInWords('paid after the hold lapsed; nothing was left', hoodie), null, "not a rule's: as it is");
});
