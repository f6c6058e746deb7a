import { fc, testProp } from '@fast-check/ava';
import test from 'ava';
import {
  bringsMoney,
  bringsNoPayment,
  foreignEventReason,
  isMoneyEventType,
  isPaymentEventType,
  MONEY_EVENT_TYPES,
  paidBy,
  PAYMENT_EVENT_TYPES,
  type PaymentEvent,
} from '../../../vocabulary';

// The saga's checks of a Stripe event (vocabulary/index.ts): which types it understands, which bring
// money, by when the money was paid, and whether the event is the purchase's own.

const owner = { sessionId: 'cs_1', paymentIntentId: 'pi_1', amountCents: 12_500, currency: 'usd' };
const own: PaymentEvent = {
  eventId: 'evt_1',
  type: 'checkout.session.completed',
  sessionId: 'cs_1',
  paymentStatus: 'paid',
  amountCents: 12_500,
  currency: 'USD',
  livemode: false,
};

test('only the five payment event types are the saga’s, and the money events are apart', (t) => {
  for (const type of PAYMENT_EVENT_TYPES) t.true(isPaymentEventType(type), type);
  for (const type of MONEY_EVENT_TYPES) {
    t.false(isPaymentEventType(type), type);
    t.true(isMoneyEventType(type), type);
  }
  for (const type of ['checkout.session.created', 'payment_intent.succeeded', '', 'CHECKOUT.SESSION.COMPLETED']) {
    t.false(isPaymentEventType(type), type);
    t.false(isMoneyEventType(type), type);
  }
});

test('money comes only with a paid completion or a delayed payment’s success', (t) => {
  const brings = PAYMENT_EVENT_TYPES.flatMap((type) =>
    ['paid', 'unpaid', 'no_payment_required', undefined]
      .filter((paymentStatus) => bringsMoney({ type, paymentStatus }))
      .map((paymentStatus) => `${type} ${paymentStatus ?? '-'}`),
  );
  t.deepEqual(brings, [
    'checkout.session.completed paid',
    'checkout.session.completed no_payment_required',
    'checkout.session.async_payment_succeeded paid',
    'checkout.session.async_payment_succeeded unpaid',
    'checkout.session.async_payment_succeeded no_payment_required',
    'checkout.session.async_payment_succeeded -',
  ]);
  for (const type of PAYMENT_EVENT_TYPES) {
    if (bringsNoPayment(type)) t.false(bringsMoney({ type, paymentStatus: 'paid' }), type);
  }
});

testProp(
  'an event’s money was paid by the end of its whole second, and an event without a time has none',
  [fc.integer({ min: 0, max: 4_000_000_000 })],
  (t, seconds) => {
    const createdAt = new Date(seconds * 1000).toISOString();
    t.is(paidBy({ createdAt }), seconds * 1000 + 999);
    t.is(paidBy({}), undefined);
  },
);

test('the purchase’s own event passes, whatever the currency’s case', (t) => {
  t.is(foreignEventReason(own, owner, false), null);
  t.is(
    foreignEventReason({ eventId: 'e', type: 'payment_intent.payment_failed', paymentIntentId: 'pi_1' }, owner, false),
    null,
  );
});

test('another mode, session, payment, amount or currency is named as the reason', (t) => {
  t.is(foreignEventReason(own, owner, true), 'the event is test mode and the key in use is not');
  t.is(
    foreignEventReason({ ...own, livemode: true }, owner, false),
    'the event is live mode and the key in use is not',
  );
  t.is(foreignEventReason({ ...own, sessionId: 'cs_2' }, owner, false), "session cs_2 is not this purchase's (cs_1)");
  t.regex(foreignEventReason(own, {}, false) ?? '', /session cs_1 was not opened by this purchase \(it has none yet\)/);
  t.is(
    foreignEventReason({ eventId: 'e', type: 'payment_intent.payment_failed', paymentIntentId: 'pi_9' }, owner, false),
    "payment pi_9 is not this purchase's (pi_1)",
  );
  t.is(foreignEventReason({ ...own, amountCents: 1 }, owner, false), "amount 1 does not match the order's 12500");
  t.is(foreignEventReason({ ...own, currency: 'eur' }, owner, false), "currency eur does not match the order's usd");
});

testProp(
  'an event that names another session than the purchase’s is always foreign',
  [fc.string({ minLength: 1 }), fc.boolean()],
  (t, sessionId, livemode) => {
    fc.pre(sessionId !== owner.sessionId);
    t.not(foreignEventReason({ ...own, sessionId, livemode }, owner, livemode), null);
  },
);

test('what the event or the purchase leaves out is not held against it', (t) => {
  const bare: PaymentEvent = { eventId: 'e', type: 'payment_intent.payment_failed' };
  t.is(foreignEventReason(bare, owner, true), null, 'no mode, no session, no payment, no amount');
  t.is(
    foreignEventReason({ ...bare, paymentIntentId: 'pi_9' }, { sessionId: 'cs_1' }, false),
    null,
    'payment not known yet',
  );
  t.is(foreignEventReason(own, { sessionId: 'cs_1' }, false), null, 'no amount recorded yet');
});
