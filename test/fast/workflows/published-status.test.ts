import test from 'ava';
import { paymentEventSignal, PurchaseStatusKey } from '../../../workflows/definitions';
import { sessionOpen, startPurchase, until, type Saga } from '../helpers/saga';
import { useFastTemporal } from '../helpers/temporal';
import { refusal, TERMS } from '../helpers/world';

// What a saga publishes as its PurchaseStatus search attribute (workflows/saga.ts, UNPUBLISHED_ENDINGS):
// a run that ends confirmed or expired leaves the last status it published while it ran (nothing
// looks a closed run up by those: its outcome is its result and its record); an ending that asks
// for a person (failed) is published, and so is a sale something still follows (the address read).
// A refused hold (rejected) ends the run at once and is left unpublished too, and a status is not
// published twice (PUBLISH_CHANGES_PATCH): each upsert is a billed action and a visibility write.

const temporal = useFastTemporal(test);

async function published(saga: Saga): Promise<string | undefined> {
  return (await saga.describe()).typedSearchAttributes.get(PurchaseStatusKey);
}

/** The search attribute upserts in the saga's history: the statuses it published, in order. */
async function upserts(saga: Saga): Promise<string[]> {
  const { events } = await saga.fetchHistory();
  return (events ?? [])
    .map((e) => e.upsertWorkflowSearchAttributesEventAttributes?.searchAttributes?.indexedFields?.PurchaseStatus)
    .flatMap((field) => (field?.data ? [JSON.parse(Buffer.from(field.data).toString()) as string] : []));
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
  lapsed.holdMs = 3_000;
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

test('a refused hold ends the run unpublished, with its record rejected', async (t) => {
  const { world } = temporal();
  const soldOut = world.open({ takeHold: () => ({ outcome: 'rejected', rejection: 'sold_out' }) });
  const saga = await startPurchase(temporal(), soldOut);
  t.like(await saga.result(), { status: 'rejected', rejection: 'sold_out' });
  t.is(soldOut.record!.status, 'rejected');
  t.deepEqual(await upserts(saga), []);
  t.not(await published(saga), 'rejected');
});

test('declines that keep the purchase awaiting_payment publish it once', async (t) => {
  const { world } = temporal();
  const c = world.open();
  const saga = await startPurchase(temporal(), c);
  await sessionOpen(c);
  for (let n = 1; n <= 2; n++) {
    await saga.signal(paymentEventSignal, c.event('payment_intent.payment_failed', { sessionId: undefined }));
    await until(() => c.count('recordPurchase') === n, `decline ${n} on the record`);
  }
  t.is(c.record!.status, 'awaiting_payment');
  await saga.signal(paymentEventSignal, c.event('checkout.session.completed', { paymentStatus: 'paid' }));
  t.like(await saga.result(), { status: 'confirmed' });
  t.deepEqual(await upserts(saga), ['awaiting_payment']);
});
