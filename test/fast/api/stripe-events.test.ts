import test from 'ava';
import type Stripe from 'stripe';
import { EXPIRE_ANSWER_GRACE_MS, shippingOf, toMoneyNews, whyTheSagaNeedNotHear } from '../../../api/stripe-events';
import { PURCHASE_STATUSES, type PurchaseStatus } from '../../../vocabulary';

// Which of a purchase's own events the webhook keeps from its saga (api/stripe-events.ts): each one
// kept back is a signal and a workflow task, or a follow-up run, the sale does not pay for.

const now = Date.parse('2026-12-03T12:00:00Z');
const lapsed = new Date(now - 1).toISOString();
const running = new Date(now + 60_000).toISOString();
const paid = { type: 'checkout.session.completed', paymentStatus: 'paid', sessionId: 'cs_1' } as const;
const expired = { type: 'checkout.session.expired', sessionId: 'cs_1' } as const;
const of = (status: PurchaseStatus, holdExpiresAt = running) => ({ status, sessionId: 'cs_1', holdExpiresAt });

test('money for a settled payment of the same session stays at the webhook; anywhere else it reaches the saga', (t) => {
  for (const status of ['confirmed', 'late_confirmed', 'refunded'] as const)
    t.is(whyTheSagaNeedNotHear(paid, of(status), now), "the session's payment is already settled", status);
  for (const status of [
    'holding',
    'awaiting_payment',
    'expired',
    'payment_failed',
    'failed',
    'needs_attention',
  ] as const)
    t.is(whyTheSagaNeedNotHear(paid, of(status), now), null, status);
  // A refund of this payment on the record (one that failed waits for support): settled, not a sale again.
  const refund = { status: 'failed', reason: 'wrong size' } as const;
  t.is(
    whyTheSagaNeedNotHear(paid, { ...of('needs_attention'), refund }, now),
    "the session's payment is already settled",
  );
  // Another session's money is never taken for this one's (the foreign check refuses it first).
  t.is(whyTheSagaNeedNotHear({ ...paid, sessionId: 'cs_2' }, of('confirmed'), now), null);
  t.is(whyTheSagaNeedNotHear({ ...paid, sessionId: undefined }, of('confirmed'), now), null);
});

test('the expiry of a lapsed hold stays at the webhook; an expiry while the hold runs reaches the saga', (t) => {
  t.is(
    whyTheSagaNeedNotHear(expired, of('awaiting_payment', lapsed), now),
    'the hold has lapsed: the saga closes the session itself',
  );
  t.is(
    whyTheSagaNeedNotHear(expired, of('holding', lapsed), now),
    'the hold has lapsed: the saga closes the session itself',
  );
  // Expired in the Dashboard (or a buyer's cancel) before the hold's end: the saga must hear it.
  t.is(whyTheSagaNeedNotHear(expired, of('awaiting_payment'), now), null);
  t.is(whyTheSagaNeedNotHear(expired, { status: 'awaiting_payment', sessionId: 'cs_1' }, now), null);
  // A needs_attention saga retrying its expire hears that Stripe closed the session.
  t.is(whyTheSagaNeedNotHear(expired, of('needs_attention', lapsed), now), null);
});

test('the expiry of a hold that lapsed longer ago than the saga’s own expire takes reaches the saga', (t) => {
  const longAgo = new Date(now - EXPIRE_ANSWER_GRACE_MS).toISOString();
  const justNow = new Date(now - EXPIRE_ANSWER_GRACE_MS + 1).toISOString();
  t.truthy(whyTheSagaNeedNotHear(expired, of('awaiting_payment', justNow), now));
  // Its expire has not answered (Stripe failing it with 5xx): the expiry by hand is what ends that call.
  t.is(whyTheSagaNeedNotHear(expired, of('awaiting_payment', longAgo), now), null);
  t.is(whyTheSagaNeedNotHear(expired, of('holding', longAgo), now), null);
  // A grace of the deployment's own (EXPIRE_ANSWER_GRACE_MS) draws the same line.
  const ago = (ms: number) => of('awaiting_payment', new Date(now - ms).toISOString());
  t.truthy(whyTheSagaNeedNotHear(expired, ago(1_999), now, 2_000));
  t.is(whyTheSagaNeedNotHear(expired, ago(2_000), now, 2_000), null);
});

test('a closed purchase keeps back every event that brings no money', (t) => {
  const noMoney = [
    expired,
    { type: 'payment_intent.payment_failed' },
    { type: 'checkout.session.async_payment_failed', sessionId: 'cs_1' },
  ] as const;
  for (const status of PURCHASE_STATUSES)
    for (const e of noMoney) {
      const why = whyTheSagaNeedNotHear(e, of(status), now);
      const closed = ['confirmed', 'late_confirmed', 'expired', 'payment_failed', 'refunded', 'failed', 'rejected'];
      t.is(why !== null, closed.includes(status), `${e.type} for ${status}`);
    }
  // A late first word of a delayed payment (completed, unpaid) of a paid purchase.
  t.truthy(whyTheSagaNeedNotHear({ ...paid, paymentStatus: 'unpaid' }, of('confirmed'), now));
  t.is(whyTheSagaNeedNotHear({ ...paid, paymentStatus: 'unpaid' }, of('expired'), now), null);
});

test('a dispute’s news carries its evidence deadline, and a malformed one is left out, not thrown on', (t) => {
  const event = (evidence_details: unknown) =>
    ({
      type: 'charge.dispute.created',
      data: {
        object: {
          id: 'dp_1',
          status: 'needs_response',
          reason: 'fraudulent',
          payment_intent: 'pi_1',
          evidence_details,
        },
      },
    }) as unknown as Parameters<typeof toMoneyNews>[0];
  t.deepEqual(toMoneyNews(event({ due_by: 1_765_000_000 })), {
    kind: 'dispute',
    disputeId: 'dp_1',
    status: 'needs_response',
    reason: 'fraudulent',
    dueBy: '2025-12-06T05:46:40.000Z',
    paymentIntentId: 'pi_1',
  });
  for (const bad of [
    null,
    { due_by: null },
    { due_by: 1e20 },
    { due_by: 'soon' },
    { due_by: 253_402_300_800 },
    { due_by: 1.5 },
  ])
    t.is((toMoneyNews(event(bad)) as { dueBy?: string }).dueBy, undefined, JSON.stringify(bad));
});

test('a completed session’s event says where it ships; one that collected no address, or another object, says nothing', (t) => {
  const address = {
    line1: '12 Rue de la Paix',
    line2: null,
    city: 'Paris',
    postal_code: '75002',
    state: null,
    country: 'FR',
  };
  const of = (object: Record<string, unknown>) =>
    shippingOf({ id: 'evt_1', type: 'checkout.session.completed', data: { object } } as unknown as Stripe.Event);
  t.deepEqual(
    of({ object: 'checkout.session', collected_information: { shipping_details: { name: 'Ann Martin', address } } }),
    { name: 'Ann Martin', address },
  );
  t.is(of({ object: 'checkout.session', collected_information: null }), null);
  t.is(of({ object: 'checkout.session', collected_information: { shipping_details: null } }), null);
  t.is(of({ object: 'payment_intent', collected_information: { shipping_details: { name: 'x', address } } }), null);
});
