import test from 'ava';
import { assertInvariants } from '../helpers/db';
import { supportRefundFailedAfterSagaEnded } from '../helpers/attention';
import { until } from '../helpers/poll';
import { sessionOf, startSystem, type System } from '../helpers/system';
import { postEvent, stripeEvent } from '../helpers/webhooks';

// A signed event is acted on only when it carries what Stripe always sends (its livemode, the object
// its type names, the amount and currency), and an event id is one event: what the signature covers
// is not enough on its own.

let sys: System;
test.before(async () => {
  sys = await startSystem();
});
test.after.always(async () => {
  await sys?.close();
});

async function buyAwaiting(sku: string, buyer: string) {
  const res = await sys.buy(sku, buyer);
  if (res.status !== 201) throw new Error(`buy: ${res.status} ${JSON.stringify(res.body)}`);
  return { purchaseId: res.body.purchaseId as string, sessionId: await sessionOf(sys.db, res.body.purchaseId) };
}

/** A paid checkout.session.completed for the purchase's own session, its amount and currency. */
function paidSession(purchaseId: string, sessionId: string): Record<string, unknown> {
  return {
    id: sessionId,
    object: 'checkout.session',
    metadata: { purchase_id: purchaseId },
    payment_status: 'paid',
    status: 'complete',
    payment_intent: 'pi_forged',
    amount_total: 12_000,
    currency: 'usd',
  };
}

const without = (o: Record<string, unknown>, field: string) => ({ ...o, [field]: undefined });

async function rowOf(eventId: string) {
  const { rows } = await sys.db.query('SELECT * FROM webhook_events WHERE event_id = $1', [eventId]);
  return rows[0];
}

/** Pays the purchase's own session for real and waits for the sale. */
async function payForReal(t: { is(a: unknown, b: unknown): void }, sku: string, purchaseId: string, session: string) {
  await sys.pay(session, 'succeeded');
  await sys.waitForPurchase(purchaseId, (r) => r.status === 'confirmed');
  t.is((await sys.stock(sku)).sold, 1);
}

test('a signed payment event missing its object, livemode, amount or currency changes no purchase', async (t) => {
  const sku = await sys.createProduct({ priceCents: 12_000 });
  const { purchaseId, sessionId } = await buyAwaiting(sku, 'mia');
  const paid = paidSession(purchaseId, sessionId);
  const cases: [Record<string, unknown>, RegExp][] = [
    // A forged session id without `object`: it read as a PaymentIntent, and confirmed the purchase.
    [
      stripeEvent('checkout.session.completed', without({ ...paid, id: 'cs_forged' }, 'object')),
      /`data\.object\.object` is missing/,
    ],
    [stripeEvent('checkout.session.completed', paid, { livemode: undefined }), /no `livemode`/],
    [stripeEvent('checkout.session.completed', without(paid, 'amount_total')), /no `amount_total`/],
    [stripeEvent('checkout.session.completed', { ...paid, currency: null }), /no `currency`/],
    [stripeEvent('checkout.session.async_payment_succeeded', without(paid, 'currency')), /no `currency`/],
    [stripeEvent('checkout.session.completed', { ...paid, object: 'payment_intent' }), /not checkout\.session/],
    [
      stripeEvent('payment_intent.payment_failed', {
        id: 'pi_forged',
        object: 'payment_intent',
        metadata: { purchase_id: purchaseId },
        currency: 'usd',
      }),
      /no `amount`/,
    ],
  ];
  for (const [event, why] of cases) {
    const res = await postEvent(sys, event);
    t.is(res.status, 200, JSON.stringify(res.body));
    t.regex(res.body.rejected ?? '', why, JSON.stringify(event));
    t.like(await rowOf(event.id as string), { status: 'rejected', purchase_id: purchaseId });
  }
  t.is((await sys.purchase(purchaseId)).body.status, 'awaiting_payment');
  t.like(await sys.stock(sku), { sold: 0, held: 1 });
  const { rows: strays } = await sys.db.query('SELECT 1 FROM stray_payments WHERE claimed_purchase = $1', [purchaseId]);
  t.is(strays.length, 0, 'an incomplete event starts no refund of anything');
  await payForReal(t, sku, purchaseId, sessionId);
  await assertInvariants(t, sys.db, sku);
});

test('a signed charge.refunded missing its object or livemode does not mark a sale refunded', async (t) => {
  const sku = await sys.createProduct({ priceCents: 12_000 });
  const { purchaseId, sessionId } = await buyAwaiting(sku, 'max');
  await payForReal(t, sku, purchaseId, sessionId);
  const { rows } = await sys.db.query('SELECT payment_intent_id FROM purchases WHERE purchase_id = $1', [purchaseId]);
  const charge = { id: 'ch_forged', object: 'charge', payment_intent: rows[0].payment_intent_id, refunded: true };
  for (const [event, why] of [
    [stripeEvent('charge.refunded', without(charge, 'object')), /`data\.object\.object` is missing/],
    [stripeEvent('charge.refunded', charge, { livemode: undefined }), /no `livemode`/],
  ] as const) {
    const res = await postEvent(sys, event);
    t.is(res.status, 200, JSON.stringify(res.body));
    t.regex(res.body.rejected ?? '', why);
    t.like(await rowOf(event.id as string), { status: 'rejected' });
  }
  t.is((await sys.purchase(purchaseId)).body.status, 'confirmed');
  await assertInvariants(t, sys.db, sku);
});

test('an event id is one event: other content under a known id is refused, a redelivery is a duplicate', async (t) => {
  const sku = await sys.createProduct({ priceCents: 12_000 });
  const { purchaseId, sessionId } = await buyAwaiting(sku, 'ned');
  // First seen naming nothing of ours (ignored); then the same id pays the purchase.
  const first = stripeEvent('checkout.session.expired', { id: 'cs_elsewhere', object: 'checkout.session' });
  t.is((await postEvent(sys, first)).status, 200);
  t.like(await rowOf(first.id as string), { status: 'ignored' });
  const second = stripeEvent('checkout.session.completed', paidSession(purchaseId, sessionId), { id: first.id });
  const refused = await postEvent(sys, second);
  t.is(refused.status, 200, JSON.stringify(refused.body));
  t.regex(refused.body.rejected ?? '', /first received with other content/);
  t.like(await rowOf(first.id as string), { status: 'ignored', type: 'checkout.session.expired', other_bodies: 1 });
  t.is((await sys.purchase(purchaseId)).body.status, 'awaiting_payment');
  t.like(await sys.stock(sku), { sold: 0, held: 1 });
  // The first content again is that event still.
  t.is((await postEvent(sys, first)).body.rejected, undefined);

  await payForReal(t, sku, purchaseId, sessionId);
  // Stripe's own redelivery of the payment (its envelope rendered anew) is a duplicate, not a conflict.
  const real = await until('the emulator to deliver the payment', async () => {
    const { body } = await sys.emulatorCall('GET', '/_emulator/events?type=checkout.session.completed');
    return (body.data as { object_id: string; delivered: boolean; event: Record<string, unknown> }[]).find(
      (e) => e.object_id === sessionId && e.delivered,
    );
  });
  const again = await postEvent(sys, { ...real.event, pending_webhooks: 0 });
  t.is(again.status, 200);
  t.like(again.body, { received: true, duplicate: true });
  t.is((await rowOf(real.event.id as string)).other_bodies, 0);
  await assertInvariants(t, sys.db, sku);
});

test('a payment event of a purchase whose refund failed after it was restocked changes nothing: no sale of a unit given back', async (t) => {
  // Support refunded the sale and put its unit back on sale; days later the refund failed.
  const { sku, purchaseId } = await supportRefundFailedAfterSagaEnded(sys, 'resent-after-restock', true);
  const sessionId = await sessionOf(sys.db, purchaseId);
  const completed = await until('the session’s completed event', async () => {
    const { body } = await sys.emulatorCall('GET', '/_emulator/events?type=checkout.session.completed');
    return (body.data as { object_id: string; event: Record<string, unknown> }[]).find(
      (e) => e.object_id === sessionId,
    );
  });
  const before = await sys.temporal.workflow.getHandle(`purchase-${purchaseId}`).describe();
  // The same payment news again (another event of that session, or one first ignored and resent).
  const res = await postEvent(sys, { ...completed.event, id: `evt_again_${purchaseId}`, pending_webhooks: 0 });
  t.is(res.status, 200, JSON.stringify(res.body));
  const { rows } = await sys.db.query('SELECT status, why FROM webhook_events WHERE event_id = $1', [
    `evt_again_${purchaseId}`,
  ]);
  t.like(rows[0], { status: 'ignored', why: "the session's payment is already settled" });
  await new Promise((r) => setTimeout(r, 1_000));
  t.like((await sys.purchase(purchaseId)).body, { status: 'needs_attention', refund: { status: 'failed' } });
  const after = await sys.temporal.workflow.getHandle(`purchase-${purchaseId}`).describe();
  t.is(after.runId, before.runId, 'no follow-up run');
  t.like(await sys.stock(sku), { sold: 0 });
  await assertInvariants(t, sys.db, sku);
});

test('a refund of another payment whose metadata names a purchase with no payment yet changes nothing, and its own payment still confirms', async (t) => {
  const sku = await sys.createProduct({ priceCents: 12_000 });
  const { purchaseId, sessionId } = await buyAwaiting(sku, 'ray');
  // Another app on the account refunds a payment of its own with metadata that names our purchase.
  for (const status of ['pending', 'failed']) {
    const refund = {
      id: 're_elsewhere_ray',
      object: 'refund',
      amount: 12_000,
      currency: 'usd',
      status,
      payment_intent: 'pi_elsewhere_ray',
      metadata: { purchase_id: purchaseId, refund_step: 'late' },
      ...(status === 'failed' ? { failure_reason: 'lost_or_stolen_card' } : {}),
    };
    const res = await postEvent(sys, stripeEvent(`refund.${status === 'failed' ? 'failed' : 'created'}`, refund));
    t.is(res.status, 200, JSON.stringify(res.body));
  }
  const view = await sys.purchase(purchaseId);
  t.like(view.body, { status: 'awaiting_payment', refund: undefined });
  // Its own payment is not taken for one already settled by a refund.
  await sys.pay(sessionId, 'succeeded');
  await sys.waitForPurchase(purchaseId, (r) => r.status === 'confirmed', 15_000);
  await assertInvariants(t, sys.db, sku);
});
