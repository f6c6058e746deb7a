import test from 'ava';
import { paymentEventSignal, PurchaseStatusKey } from '../../../workflows/definitions';
import { sessionOpen, startPurchase, type Saga } from '../helpers/saga';
import { useFastTemporal } from '../helpers/temporal';
import { refusal, TERMS } from '../helpers/world';

// What a saga publishes as its PurchaseStatus search attribute (workflows/saga.ts, UNPUBLISHED_ENDINGS):
// a run that ends confirmed or expired leaves the last status it published while it ran (nothing
// looks a closed run up by those: its outcome is its result and its record); an ending that asks
// for a person (failed) is published, and so is a sale something still follows (the address read).

const temporal = useFastTemporal(test);

async function published(saga: Saga): Promise<string | undefined> {
  return (await saga.describe()).typedSearchAttributes.get(PurchaseStatusKey);
}

test('a sale that ends its run is left unpublished; one followed by the address read is published', async (t) => {
  const { world } = temporal();
  const plain = world.open();
  const ships = world.open();
  const [a, b] = await Promise.all([
    startPurchase(temporal(), plain),
    startPurchase(temporal(), ships, { terms: { ...TERMS, shippingCountries: ['FR'] } }),
  ]);
  await Promise.all([sessionOpen(plain), sessionOpen(ships)]);
  await a.signal(paymentEventSignal, plain.event('checkout.session.completed', { paymentStatus: 'paid' }));
  await b.signal(paymentEventSignal, ships.event('checkout.session.completed', { paymentStatus: 'paid' }));
  t.like(await a.result(), { status: 'confirmed' });
  t.like(await b.result(), { status: 'confirmed' });
  t.is(await published(a), 'awaiting_payment');
  t.is(await published(b), 'confirmed');
});

test('a lapsed hold ends unpublished; a session that could not open publishes failed', async (t) => {
  const { world } = temporal();
  const lapsed = world.open();
  lapsed.holdMs = 1_500;
  const refused = world.open({
    openCheckout: () => {
      throw refusal('Stripe answered 400: invalid currency');
    },
  });
  const [a, b] = await Promise.all([startPurchase(temporal(), lapsed), startPurchase(temporal(), refused)]);
  t.like(await a.result(), { status: 'expired' });
  t.like(await b.result(), { status: 'failed' });
  t.is(await published(a), 'awaiting_payment');
  t.is(await published(b), 'failed');
});
