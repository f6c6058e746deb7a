import test from 'ava';
import { assertInvariants } from '../helpers/db';
import { sellTo, sessionOf, startSystem, SUPPORT_TOKEN, type System } from '../helpers/system';

// A refund is followed to its end: the unit goes back on sale only once the refund succeeded, a
// failed refund is shown to support, and refunds made in the Dashboard and disputes are recorded.
// Serial: how refunds start (`/_emulator/settings`) is account-wide.

let sys: System;
test.before(async () => {
  sys = await startSystem();
});
test.after.always(async () => {
  await sys?.close();
});
test.afterEach.always(async () => {
  await sys.emulatorCall('POST', '/_emulator/settings', { refundStatus: 'succeeded' });
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const auth = { authorization: `Bearer ${SUPPORT_TOKEN}` };

async function confirmedPurchase(buyer: string, overrides: Record<string, unknown> = {}) {
  const sku = await sys.createProduct({ stock: 1, ...overrides });
  const res = await sys.buy(sku, buyer);
  await sys.pay(await sessionOf(sys.db, res.body.purchaseId), 'succeeded');
  const p = await sys.waitForPurchase(res.body.purchaseId, (r) => r.status === 'confirmed');
  return { sku, purchaseId: res.body.purchaseId as string, paymentIntentId: p.payment_intent_id as string };
}

async function supportRefund(purchaseId: string, restock: boolean) {
  return sys.api('POST', `/v1/support/purchases/${purchaseId}/refund`, { reason: 'wrong colour', restock }, auth);
}

test.serial('a pending support refund puts the unit back on sale only once it succeeds', async (t) => {
  await sys.emulatorCall('POST', '/_emulator/settings', { refundStatus: 'pending' });
  const { sku, purchaseId } = await confirmedPurchase('lea');
  const res = await supportRefund(purchaseId, true);
  t.is(res.status, 202, JSON.stringify(res.body));
  t.like(res.body, { refund: { status: 'pending' } });
  const pending = await sys.waitForPurchase(purchaseId, (r) => r.refund_id !== null);
  await sleep(500);
  t.like(await sys.stock(sku), { available: 0, sold: 1 });

  t.is((await sys.emulatorCall('POST', `/_emulator/refunds/${pending.refund_id}/succeed`)).status, 200);
  const done = await sys.waitForPurchase(purchaseId, (r) => r.refund_status === 'succeeded');
  t.is(done.status, 'refunded');
  for (let i = 0; (await sys.stock(sku)).available !== 1 && i < 100; i++) await sleep(100);
  t.like(await sys.stock(sku), { available: 1, sold: 0 });
  await assertInvariants(t, sys.db, sku);
});

test.serial(
  'refund.failed after a support refund: the failure is on the purchase, needs_attention, nothing restocked',
  async (t) => {
    await sys.emulatorCall('POST', '/_emulator/settings', { refundStatus: 'pending' });
    const { sku, purchaseId } = await confirmedPurchase('max');
    t.is((await supportRefund(purchaseId, true)).status, 202);
    const pending = await sys.waitForPurchase(purchaseId, (r) => r.refund_id !== null);
    await sys.emulatorCall('POST', `/_emulator/refunds/${pending.refund_id}/fail`, {
      failure_reason: 'expired_or_canceled_card',
    });
    const failed = await sys.waitForPurchase(purchaseId, (r) => r.status === 'needs_attention');
    t.is(failed.refund_status, 'failed');
    t.is(failed.refund_failure_reason, 'expired_or_canceled_card');
    t.regex(failed.reason, /the refund failed: expired_or_canceled_card/);
    const view = await sys.purchase(purchaseId);
    t.like(view.body, { status: 'needs_attention', refund: { status: 'failed' } });
    await sleep(500);
    t.like(await sys.stock(sku), { available: 0, sold: 1 });
    // Its saga waits for support (retry, or settled by hand), in plain sight.
    const wf = await sys.temporal.workflow.getHandle(`refund-${purchaseId}`).describe();
    t.is(wf.status.name, 'RUNNING');

    // Asking for the refund again tells the waiting saga to try again: a second refund, which succeeds.
    await sys.emulatorCall('POST', '/_emulator/settings', { refundStatus: 'succeeded' });
    const again = await supportRefund(purchaseId, true);
    t.is(again.status, 202, JSON.stringify(again.body));
    const done = await sys.waitForPurchase(
      purchaseId,
      (r) => r.status === 'refunded' && r.refund_status === 'succeeded',
    );
    t.not(done.refund_id, pending.refund_id);
    for (let i = 0; (await sys.stock(sku)).available !== 1 && i < 100; i++) await sleep(100);
    t.like(await sys.stock(sku), { available: 1, sold: 0 });
    await assertInvariants(t, sys.db, sku);
  },
);

test.serial(
  'a support refund asked while another is being made joins it, and the audit trail has its own words',
  async (t) => {
    const { sku, purchaseId } = await confirmedPurchase('nora');
    // Stripe slow to answer the refund: the first request's saga is still making it when the second comes.
    await sys.emulatorCall('POST', '/_emulator/faults', { method: 'POST', path: '/v1/refunds', latencyMs: 3000 });
    try {
      const first = supportRefund(purchaseId, true);
      const saga = sys.temporal.workflow.getHandle(`refund-${purchaseId}`);
      for (let i = 0; i < 100; i++) {
        if ((await saga.describe().catch(() => null))?.status.name === 'RUNNING') break;
        await sleep(50);
      }
      const second = await sys.api(
        'POST',
        `/v1/support/purchases/${purchaseId}/refund`,
        { reason: 'asked twice', restock: false, note: 'second agent' },
        auth,
      );
      t.is(second.status, 202, JSON.stringify(second.body));
      t.is((await first).status, 202);
    } finally {
      await sys.emulatorCall('DELETE', '/_emulator/faults');
    }
    await sys.waitForPurchase(purchaseId, (r) => r.status === 'refunded' && r.refund_status === 'succeeded');
    const { rows } = await sys.db.query('SELECT action, detail FROM audit_log WHERE purchase_id = $1 ORDER BY id', [
      purchaseId,
    ]);
    // The joined request is written when it comes, maybe before the saga wrote the one it started with.
    t.deepEqual(rows.map((r) => r.action).sort(), ['refund_request_joined', 'refund_requested', 'refunded']);
    const detailOf = (action: string) => rows.find((r) => r.action === action)?.detail as unknown;
    t.deepEqual(detailOf('refund_request_joined'), { reason: 'asked twice', restock: false, note: 'second agent' });
    t.like(detailOf('refund_requested'), { reason: 'wrong colour', restock: true });
    for (let i = 0; (await sys.stock(sku)).available !== 1 && i < 100; i++) await sleep(100);
    t.like(await sys.stock(sku), { available: 1, sold: 0 }, 'the saga that ran restocked, as its request asked');
    await assertInvariants(t, sys.db, sku);
  },
);

test.serial(
  'a support refund whose saga already ended finding nothing to refund is answered 409 again, not a 500',
  async (t) => {
    const { sku, purchaseId, paymentIntentId } = await confirmedPurchase('nils');
    // The record as a race can leave it: confirmed to the API, with no payment for the saga to refund
    // (its saga ends not_refundable, and no refund is ever written).
    await sys.db.query('UPDATE purchases SET payment_intent_id = NULL WHERE purchase_id = $1', [purchaseId]);
    try {
      const first = await supportRefund(purchaseId, false);
      t.is(first.status, 409, JSON.stringify(first.body));
      t.is((await sys.temporal.workflow.getHandle(`refund-${purchaseId}`).describe()).status.name, 'COMPLETED');
      // Its workflow id is taken by a run that completed: the start is refused, and the answer is that run's.
      const again = await supportRefund(purchaseId, false);
      t.is(again.status, 409, JSON.stringify(again.body));
      t.like(again.body, { type: first.body.type, detail: first.body.detail });
    } finally {
      await sys.db.query('UPDATE purchases SET payment_intent_id = $2 WHERE purchase_id = $1', [
        purchaseId,
        paymentIntentId,
      ]);
    }
    t.like(await sys.stock(sku), { sold: 1 });
    await assertInvariants(t, sys.db, sku);
  },
);

test.serial('a late refund that fails after Stripe took it moves the purchase to needs_attention', async (t) => {
  await sys.emulatorCall('POST', '/_emulator/settings', { refundStatus: 'pending' });
  const sku = await sys.createProduct({ holdSeconds: 4, stock: 1 });
  const late = await sys.buy(sku, 'ned');
  await sys.waitForPurchase(late.body.purchaseId, (r) => r.status === 'expired', 20_000);
  await sellTo(sys, sku, 'ned-winner');
  await sys.pay(await sessionOf(sys.db, late.body.purchaseId), 'succeeded', { force: true });
  const refunding = await sys.waitForPurchase(late.body.purchaseId, (r) => r.status === 'refunded');
  t.is(refunding.refund_status, 'pending');
  await sys.emulatorCall('POST', `/_emulator/refunds/${refunding.refund_id}/fail`, {});
  const failed = await sys.waitForPurchase(late.body.purchaseId, (r) => r.status === 'needs_attention');
  t.is(failed.refund_status, 'failed');
  t.regex(failed.reason, /sold out.*the refund failed/);
  await assertInvariants(t, sys.db, sku);
});

test.serial('a refund made in the Dashboard and a dispute are recorded on the purchase', async (t) => {
  const { sku, purchaseId, paymentIntentId } = await confirmedPurchase('ora');
  const dispute = await sys.emulatorCall('POST', `/_emulator/payment_intents/${paymentIntentId}/dispute`, {
    reason: 'fraudulent',
  });
  t.is(dispute.status, 200, JSON.stringify(dispute.body));
  const disputed = await sys.waitForPurchase(purchaseId, (r) => r.dispute_id !== null);
  t.is(disputed.dispute_reason, 'fraudulent');
  const view = await sys.purchase(purchaseId);
  t.like(view.body, { status: 'confirmed', dispute: { reason: 'fraudulent' } });
  await sys.emulatorCall('POST', `/_emulator/disputes/${disputed.dispute_id}/close`, { outcome: 'won' });
  await sys.waitForPurchase(purchaseId, (r) => r.dispute_status === 'won');

  const other = await confirmedPurchase('pia');
  const refunded = await sys.emulatorCall('POST', `/_emulator/payment_intents/${other.paymentIntentId}/refund`, {});
  t.is(refunded.status, 200, JSON.stringify(refunded.body));
  const p = await sys.waitForPurchase(other.purchaseId, (r) => r.status === 'refunded');
  t.is(p.refund_status, 'succeeded');
  t.regex(p.refund_reason, /outside the service/);
  // Money came back outside the service: the sale stands in the stock count until support restocks.
  t.like(await sys.stock(other.sku), { sold: 1 });
  await assertInvariants(t, sys.db, sku);
  await assertInvariants(t, sys.db, other.sku);
});

test.serial(
  'a support refund that fails after it succeeded, while its saga still finishes, moves the purchase to needs_attention',
  async (t) => {
    const { sku, purchaseId } = await confirmedPurchase('uma');
    // The saga's restock waits for the hold's row, locked here: the refund has succeeded and its saga
    // is still running when Stripe says the refund failed (the bank sent the money back).
    const blocker = await sys.db.connect();
    await blocker.query('BEGIN');
    await blocker.query('SELECT 1 FROM holds WHERE purchase_id = $1 FOR UPDATE', [purchaseId]);
    let answered: ReturnType<typeof supportRefund> | undefined;
    try {
      answered = supportRefund(purchaseId, true);
      const refunded = await sys.waitForPurchase(purchaseId, (r) => r.refund_status === 'succeeded');
      const failing = await sys.emulatorCall('POST', `/_emulator/refunds/${refunded.refund_id}/fail`, {});
      t.is(failing.status, 200, JSON.stringify(failing.body));
      // The webhook's news reached the record (and the running saga) before the saga goes on.
      await sys.waitForPurchase(purchaseId, (r) => r.refund_status === 'failed');
    } finally {
      await blocker.query('ROLLBACK');
      blocker.release();
    }
    // Answered while the refund looked done (202), or once the failure was on the record (409, needs attention).
    const first = await answered;
    t.true(
      first.status === 202 || (first.status === 409 && first.body.purchaseStatus === 'needs_attention'),
      JSON.stringify(first.body),
    );
    await sys.temporal.workflow.getHandle(`refund-${purchaseId}`).result();
    // Before, the saga's last write said refunded, succeeded: the buyer had neither the unit nor the money.
    const after = await sys.waitForPurchase(purchaseId, (r) => r.status === 'needs_attention');
    t.is(after.refund_status, 'failed');
    t.regex(after.reason, /the refund failed after it succeeded/);
    // Support asks again: the refund is made again, and this one stands.
    const again = await supportRefund(purchaseId, false);
    t.is(again.status, 202, `again: ${JSON.stringify(again.body)}`);
    const refunded = await sys.waitForPurchase(
      purchaseId,
      (r) => r.status === 'refunded' && r.refund_status === 'succeeded' && r.refund_id !== after.refund_id,
    );
    t.truthy(refunded.refund_id);
    await assertInvariants(t, sys.db, sku);
  },
);
