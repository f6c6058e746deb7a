import test from 'ava';
import { purchaseWorkflowId } from '../../vocabulary';
import { assertInvariants } from '../helpers/db';
import { sessionOf, startSystem, type System } from '../helpers/system';

// Limits per shipping address: the address Checkout collected (collected_information.shipping_details),
// normalised, is counted against what it already bought of the SKU; beyond `maxPerAddress` the payment
// is refunded with the reason and its unit goes back on sale. Also on the follow-up run a payment
// starts after its saga closed, which carries the product's terms.

let sys: System;
test.before(async () => {
  sys = await startSystem();
});
test.after.always(async () => {
  await sys?.close();
});

/** One address, written three ways: case, spacing, punctuation. */
const WRITTEN = [
  { line1: '12 Rue de la Paix', line2: 'Apt 4', city: 'Paris', postal_code: '75002', country: 'FR' },
  { line1: '12 rue de la paix', line2: 'apt 4', city: 'PARIS', postal_code: '75 002', country: 'fr' },
  { line1: '12,  Rue-de-la-Paix.', line2: ' Apt. 4 ', city: 'Paris ', postal_code: '75002', country: 'FR' },
];
const shipping = (i: number) => ({ name: `Buyer ${i}`, address: WRITTEN[i] });
const ended = (r: { status: string }) => ['confirmed', 'late_confirmed', 'refunded'].includes(r.status);

async function workflowClosed(purchaseId: string): Promise<void> {
  const handle = sys.temporal.workflow.getHandle(purchaseWorkflowId(purchaseId));
  for (let i = 0; i < 200; i++) {
    if ((await handle.describe()).status.name !== 'RUNNING') return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`the saga of ${purchaseId} never closed`);
}

test('three purchases paid with one address written three ways where maxPerAddress is 2: two sold, one refunded with the reason', async (t) => {
  const sku = await sys.createProduct({ stock: 5, maxPerAddress: 2, shippingCountries: ['FR', 'BE'] });
  t.like(await sys.stock(sku), { maxPerAddress: 2, shippingCountries: ['FR', 'BE'] });
  const bought = [await sys.buy(sku, 'addr-ann'), await sys.buy(sku, 'addr-ben'), await sys.buy(sku, 'addr-cat')];
  const sessions = await Promise.all(bought.map((b) => sessionOf(sys.db, b.body.purchaseId)));
  // The session asks Checkout for the address, in the product's countries.
  const read = async (id: string): Promise<any> => {
    const res = await fetch(`${sys.emulator.url}/v1/checkout/sessions/${id}`, {
      headers: { authorization: 'Bearer sk_test_emulator' },
    });
    return res.json();
  };
  t.deepEqual((await read(sessions[0])).shipping_address_collection, { allowed_countries: ['FR', 'BE'] });
  // A session that collects an address cannot be paid without one.
  t.is((await sys.pay(sessions[0], 'succeeded')).status, 400);
  // All three at once: each claim is taken under a lock, so exactly two pass. Each with its own card.
  await Promise.all(
    sessions.map((s, i) => sys.pay(s, 'succeeded', { shipping: shipping(i), card: { fingerprint: `fp-addr-${i}` } })),
  );
  const outcomes = await Promise.all(bought.map((b) => sys.waitForPurchase(b.body.purchaseId, ended)));
  // Stripe's current API version reports the address on the session here, not in a top-level shipping_details.
  t.like((await read(sessions[0])).collected_information.shipping_details, shipping(0));
  t.deepEqual(outcomes.map((o) => o.status).sort(), ['confirmed', 'confirmed', 'refunded']);
  const refunded = outcomes.find((o) => o.status === 'refunded');
  t.regex(refunded.reason, /limit per address/);
  t.like(await sys.waitForPurchase(refunded.purchase_id, (r) => r.refund_status === 'succeeded'), {
    refund_status: 'succeeded',
  });
  const { rows } = await sys.db.query('SELECT kind FROM notifications WHERE purchase_id = $1', [refunded.purchase_id]);
  t.deepEqual(rows, [{ kind: 'refunded_address_limit' }]);
  // One key for the three writings; the two sales are its claims.
  const keys = await sys.db.query('SELECT DISTINCT address_key FROM address_claims WHERE sku = $1', [sku]);
  t.is(keys.rows.length, 1);
  t.like(await sys.stock(sku), { sold: 2, held: 0, available: 3 });
  await assertInvariants(t, sys.db, sku);
});

test('every walk-around the outside review listed, where maxPerAddress is 1, is refunded; the neighbours are not', async (t) => {
  const sku = await sys.createProduct({ stock: 12, maxPerAddress: 1, shippingCountries: ['US'] });
  const address = {
    line1: '350 Fifth Avenue',
    line2: 'Apt 4',
    city: 'New York',
    state: 'NY',
    postal_code: '10118',
    country: 'US',
  };
  const first = await sys.buy(sku, 'addr-ivy');
  await sys.pay(await sessionOf(sys.db, first.body.purchaseId), 'succeeded', {
    shipping: { name: 'Ivy', address },
    card: { fingerprint: 'fp-review-0' },
  });
  t.is((await sys.waitForPurchase(first.body.purchaseId, ended)).status, 'confirmed');
  // Each on its own card and under another name, all at once: the review's three (ZIP+4, a soft
  // hyphen, a Cyrillic А) and the ones it found offline.
  const walkArounds = [
    { ...address, postal_code: '10118-0001' },
    { ...address, line1: '350 Fif\u00ADth Avenue' },
    { ...address, line1: '350 Fifth \u0410venue' },
    { ...address, line1: '350 Fif\u200Bth Avenue' },
    { ...address, line1: '350 Fif.th Avenue' },
    { ...address, line1: '\uFF13\uFF15\uFF10 Fifth Avenue' },
    { ...address, line1: '\u0663\u0665\u0660 Fifth Avenue' },
    { ...address, postal_code: '101\u200B18' },
    { ...address, line2: 'Apt 04' },
  ];
  // Real other addresses next to it: another flat, another building.
  const neighbours = [
    { ...address, line2: 'Apt 14' },
    { ...address, line1: '351 Fifth Avenue' },
  ];
  const pay = async (who: string, i: number, shipTo: typeof address) => {
    const b = await sys.buy(sku, `${who}-${i}`);
    await sys.pay(await sessionOf(sys.db, b.body.purchaseId), 'succeeded', {
      shipping: { name: `${who} ${i}`, address: shipTo },
      card: { fingerprint: `fp-${who}-${i}` },
    });
    return (await sys.waitForPurchase(b.body.purchaseId, ended)) as { status: string; reason: string };
  };
  const [walked, next] = await Promise.all([
    Promise.all(walkArounds.map((w, i) => pay('walker', i, w))),
    Promise.all(neighbours.map((n, i) => pay('neighbour', i, n))),
  ]);
  t.deepEqual(
    walked.map((o) => o.status),
    walkArounds.map(() => 'refunded'),
  );
  for (const o of walked) t.regex(o.reason, /limit per address/);
  t.deepEqual(
    next.map((o) => o.status),
    ['confirmed', 'confirmed'],
  );
  const keys = await sys.db.query('SELECT DISTINCT address_key FROM address_claims WHERE sku = $1', [sku]);
  t.is(keys.rows.length, 3);
  t.like(await sys.stock(sku), { sold: 3, held: 0, available: 9 });
  await assertInvariants(t, sys.db, sku);
});

test('another address is not held back by the limit of the first', async (t) => {
  const sku = await sys.createProduct({ stock: 3, maxPerAddress: 1, shippingCountries: ['FR'] });
  const [a, b] = [await sys.buy(sku, 'addr-dan'), await sys.buy(sku, 'addr-eve')];
  await sys.pay(await sessionOf(sys.db, a.body.purchaseId), 'succeeded', { shipping: shipping(0) });
  const other = { name: 'Eve', address: { ...WRITTEN[0], line2: 'Apt 5' } };
  await sys.pay(await sessionOf(sys.db, b.body.purchaseId), 'succeeded', { shipping: other });
  t.is((await sys.waitForPurchase(a.body.purchaseId, ended)).status, 'confirmed');
  t.is((await sys.waitForPurchase(b.body.purchaseId, ended)).status, 'confirmed');
  await assertInvariants(t, sys.db, sku);
});

test('a payment after its saga closed (a follow-up run) is held to the address limit and the card limit', async (t) => {
  const sku = await sys.createProduct({
    stock: 5,
    holdSeconds: 4,
    maxPerAddress: 1,
    maxPerCard: 1,
    shippingCountries: ['FR'],
  });
  // Two late payers whose sagas close (expired) before they pay.
  const lateAddress = await sys.buy(sku, 'addr-fay');
  const lateCard = await sys.buy(sku, 'addr-gus');
  for (const late of [lateAddress, lateCard]) {
    await sys.waitForPurchase(late.body.purchaseId, (r) => r.status === 'expired', 20_000);
    await workflowClosed(late.body.purchaseId);
  }
  // Meanwhile a buyer pays in time with the address and the card.
  const first = await sys.buy(sku, 'addr-hal');
  const card = { fingerprint: 'fp-follow-up' };
  // Forced: a payment that raced the session's expiry at the lapse, if the machine was that slow.
  await sys.pay(await sessionOf(sys.db, first.body.purchaseId), 'succeeded', {
    shipping: shipping(0),
    card,
    force: true,
  });
  // A sale either way: paid inside its 4 s hold, or just after it and confirmed late (the payment's
  // time is Stripe's whole second), it claims the address and the card.
  t.regex((await sys.waitForPurchase(first.body.purchaseId, ended)).status, /^(confirmed|late_confirmed)$/);

  // The same address written another way, on another card: the follow-up run refunds it.
  await sys.pay(await sessionOf(sys.db, lateAddress.body.purchaseId), 'succeeded', {
    force: true,
    shipping: shipping(1),
    card: { fingerprint: 'fp-follow-up-2' },
  });
  const byAddress = await sys.waitForPurchase(lateAddress.body.purchaseId, ended);
  t.is(byAddress.status, 'refunded');
  t.regex(byAddress.reason, /limit per address/);
  // The same card, another address: refunded by the card's limit, which the follow-up run now knows.
  const elsewhere = { name: 'Gus', address: { line1: '1 Main St', city: 'Lyon', postal_code: '69001', country: 'FR' } };
  await sys.pay(await sessionOf(sys.db, lateCard.body.purchaseId), 'succeeded', {
    force: true,
    shipping: elsewhere,
    card,
  });
  const byCard = await sys.waitForPurchase(lateCard.body.purchaseId, ended);
  t.is(byCard.status, 'refunded');
  t.regex(byCard.reason, /limit per card/);
  const kinds = await sys.db.query('SELECT kind FROM notifications WHERE purchase_id = ANY($1::text[]) ORDER BY kind', [
    [lateAddress.body.purchaseId, lateCard.body.purchaseId],
  ]);
  t.deepEqual(kinds.rows, [{ kind: 'refunded_address_limit' }, { kind: 'refunded_card_limit' }]);
  t.like(await sys.stock(sku), { sold: 1, held: 0, available: 4 });
  await assertInvariants(t, sys.db, sku);
});
