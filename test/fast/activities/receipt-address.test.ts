import test from 'ava';
import { receiptAddress } from '../../../activities/confirmation';

// The receipt's address in the confirmation notice comes from Checkout's success URL, less the
// `result=paid` that tells the purchase page its buyer has just paid.

test('the default success URL gives the purchase page, without result=paid', (t) => {
  t.is(
    receiptAddress('https://shop.example/purchases/{purchaseId}?result=paid', 'pur_1'),
    'https://shop.example/purchases/pur_1',
  );
  t.is(
    receiptAddress('https://shop.example/purchases/{purchaseId}?lang=fr&result=paid', 'pur_1'),
    'https://shop.example/purchases/pur_1?lang=fr',
  );
});

test('a success URL of the shop’s own is kept as it is, the purchase id filled in', (t) => {
  t.is(
    receiptAddress('https://shop.example/thanks?order={purchaseId}', 'pur_a b'),
    'https://shop.example/thanks?order=pur_a%20b',
  );
  t.is(receiptAddress('https://shop.example/purchases/{purchaseId}', 'pur_1'), 'https://shop.example/purchases/pur_1');
});
