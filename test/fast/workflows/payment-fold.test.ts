import { fc, testProp } from '@fast-check/ava';
import test from 'ava';
import { PaymentFold } from '../../../workflows/payment-fold';
import { PAYMENT_EVENT_TYPES, type PaymentEvent } from '../../../vocabulary';

// workflows/payment-fold.ts, which is pure: a purchase's payment events folded into one view that a
// redelivery does not change and an event out of order cannot move backwards. (Kept out of
// test/fast/workflows/, the workflow tests' folder.)

const event = fc.record({
  eventId: fc.constantFrom('e1', 'e2', 'e3', 'e4', 'e5', 'e6'),
  type: fc.constantFrom(...PAYMENT_EVENT_TYPES),
  paymentStatus: fc.constantFrom('paid', 'unpaid', 'no_payment_required', undefined),
}) as fc.Arbitrary<PaymentEvent>;

const fold = (events: PaymentEvent[]) => {
  const f = new PaymentFold();
  for (const e of events) f.apply(e);
  return f;
};
const RANK = { none: 0, pending: 1, failed: 2, paid: 3 };

test('a paid completion pays; an unpaid one is pending until the delayed payment settles', (t) => {
  const f = new PaymentFold();
  t.true(f.apply({ eventId: 'a', type: 'checkout.session.completed', paymentStatus: 'unpaid' }));
  t.is(f.payment, 'pending');
  t.false(f.settled);
  f.apply({ eventId: 'b', type: 'checkout.session.async_payment_failed' });
  t.is(f.payment, 'failed');
  t.true(f.settled);
  f.apply({ eventId: 'c', type: 'checkout.session.async_payment_succeeded' });
  t.is(f.payment, 'paid', 'paid wins over failed');
});

test('declines are counted and the session’s expiry noted, without settling the payment', (t) => {
  const f = fold([
    { eventId: 'd1', type: 'payment_intent.payment_failed' },
    { eventId: 'd2', type: 'payment_intent.payment_failed' },
    { eventId: 'd2', type: 'payment_intent.payment_failed' },
    { eventId: 'x', type: 'checkout.session.expired' },
  ]);
  t.like(f, { declines: 2, sessionExpired: true, payment: 'none', settled: false });
});

testProp(
  'an event delivered again changes nothing and is told apart',
  [fc.array(event, { minLength: 1, maxLength: 12 })],
  (t, events) => {
    const once = fold(events);
    const twice = new PaymentFold();
    for (const e of events) {
      twice.apply(e);
      t.false(twice.apply(e), 'a redelivery is reported as seen');
    }
    t.deepEqual(
      [twice.payment, twice.declines, twice.sessionExpired],
      [once.payment, once.declines, once.sessionExpired],
    );
  },
);

testProp(
  'the payment never moves backwards: none, pending, then failed or paid, and paid is for good',
  [fc.array(event, { minLength: 1, maxLength: 12 })],
  (t, events) => {
    const f = new PaymentFold();
    for (const e of events) {
      const before = f.payment;
      f.apply(e);
      t.true(
        RANK[f.payment] >= RANK[before] || (before === 'failed' && f.payment === 'paid'),
        `${before} → ${f.payment}`,
      );
      if (before === 'paid') t.is(f.payment, 'paid');
    }
  },
);

testProp(
  'any order of the same distinct events ends the same',
  [
    fc
      .uniqueArray(event, { selector: (e) => e.eventId, maxLength: 6 })
      .chain((es) =>
        fc.tuple(fc.constant(es), fc.shuffledSubarray(es, { minLength: es.length, maxLength: es.length })),
      ),
  ],
  (t, [events, shuffled]) => {
    const a = fold(events);
    const b = fold(shuffled);
    t.deepEqual([b.payment, b.declines, b.sessionExpired], [a.payment, a.declines, a.sessionExpired]);
  },
);
