import { fc, testProp } from '@fast-check/ava';
import test from 'ava';
import {
  canMove,
  contractRefundStatus,
  HOLDING_STATUSES,
  isFinal,
  isPaid,
  isRefundable,
  PURCHASE_STATUSES,
  PURCHASE_TRANSITIONS,
  type PurchaseStatus,
} from '../../../vocabulary';

// What the statuses promise beside the table of moves (test/fast/vocabulary/transitions.test.ts):
// staying is always allowed, a final status is left only when money arrives, a paid one never goes
// back to waiting, and only a sale is refundable.

const status = fc.constantFrom(...PURCHASE_STATUSES);

testProp(
  'a purchase may always stay where it is, and moves only along PURCHASE_TRANSITIONS',
  [status, status],
  (t, from, to) => {
    t.true(canMove(from, from));
    t.is(canMove(from, to), from === to || (PURCHASE_TRANSITIONS[from] as readonly PurchaseStatus[]).includes(to));
  },
);

test('no status moves back to holding, and a rejected purchase moves nowhere', (t) => {
  for (const from of PURCHASE_STATUSES) {
    if (from !== 'holding') t.false(canMove(from, 'holding'), from);
    if (from !== 'rejected') t.false(canMove('rejected', from), from);
  }
});

test('final, paid and refundable statuses nest: refundable ⊂ paid ⊂ final, and none of them holds stock', (t) => {
  for (const s of PURCHASE_STATUSES) {
    if (isRefundable(s)) t.true(isPaid(s), `${s} is refundable, so paid`);
    if (isPaid(s)) t.true(isFinal(s), `${s} is paid, so final`);
    if (isFinal(s)) t.false((HOLDING_STATUSES as readonly string[]).includes(s), `${s} is final, so holds nothing`);
  }
  t.deepEqual(PURCHASE_STATUSES.filter(isRefundable), ['confirmed', 'late_confirmed']);
  t.deepEqual(PURCHASE_STATUSES.filter(isPaid), ['confirmed', 'late_confirmed', 'refunded']);
  t.false(isFinal('needs_attention'), 'support still has to settle it');
});

test('a paid purchase never moves back to waiting for a payment, nor to an unpaid end', (t) => {
  for (const from of PURCHASE_STATUSES.filter(isPaid)) {
    for (const to of ['awaiting_payment', 'expired', 'payment_failed', 'failed'] as const) {
      t.false(canMove(from, to), `${from} → ${to}`);
    }
  }
});

test('a final status is left only for a late sale, a refund or support’s attention', (t) => {
  const afterMoney = new Set(['confirmed', 'late_confirmed', 'refunded', 'needs_attention']);
  for (const from of PURCHASE_STATUSES.filter(isFinal)) {
    for (const to of PURCHASE_TRANSITIONS[from]) t.true(afterMoney.has(to), `${from} → ${to}`);
  }
});

test('a refund status reads as one of the contract’s three: settled by hand is succeeded, canceled failed, the rest pending', (t) => {
  const statuses = ['pending', 'succeeded', 'failed', 'canceled', 'requires_action', 'settled'] as const;
  t.deepEqual(statuses.map(contractRefundStatus), ['pending', 'succeeded', 'failed', 'failed', 'pending', 'succeeded']);
});
