import test, { type ExecutionContext } from 'ava';
import { WorkflowNotFoundError } from '@temporalio/client';
import { createStripe } from '../../config/clients';
import { assertInvariants } from '../helpers/db';
import { foreignSession } from '../helpers/attention';
import { until } from '../helpers/poll';
import { sessionOf, startSystem, type System } from '../helpers/system';
import { postEvent, stripeEvent } from '../helpers/webhooks';

// Issue 27, item 5: a correctly signed event (the webhook secret leaked) that names one purchase
// while carrying another's paid session must not get that payment refunded by the stray-payment
// path. The stray refund is decided from the session Stripe returns and from our records.

let sys: System;
test.before(async () => {
  sys = await startSystem();
});
test.after.always(async () => {
  await sys?.close();
});

/** Stripe as the test reads it (the emulator keeps one account for every key). */
const stripe = () => createStripe({ stripeSecretKey: 'sk_test_auditor', stripeApiUrl: sys.emulator.url });

async function buyAwaiting(sku: string, buyer: string) {
  const res = await sys.buy(sku, buyer);
  if (res.status !== 201) throw new Error(`buy: ${res.status} ${JSON.stringify(res.body)}`);
  const purchaseId = res.body.purchaseId as string;
  return { purchaseId, sessionId: await sessionOf(sys.db, purchaseId) };
}

/** A paid checkout.session.completed for `sessionId` as the forger writes it, naming `claimed`. */
function forgedCompleted(sessionId: string, claimed: string, paymentIntentId: string, amountCents: number) {
  return stripeEvent('checkout.session.completed', {
    id: sessionId,
    object: 'checkout.session',
    metadata: { purchase_id: claimed },
    client_reference_id: claimed,
    payment_status: 'paid',
    status: 'complete',
    payment_intent: paymentIntentId,
    amount_total: amountCents,
    currency: 'usd',
  });
}

/** The stray-payment saga of `sessionId` once it ended, and the row it left. */
async function strayOutcome(sessionId: string) {
  const handle = sys.temporal.workflow.getHandle(`stray-${sessionId}`);
  // The webhook notes the stray payment, then starts its saga: the row can be there before the run.
  await until('the stray saga started', async () => {
    try {
      await handle.describe();
      return true;
    } catch (err) {
      if (err instanceof WorkflowNotFoundError) return undefined;
      throw err;
    }
  });
  const result = await handle.result();
  const { rows } = await sys.db.query('SELECT * FROM stray_payments WHERE session_id = $1', [sessionId]);
  return { result, row: rows[0] };
}

async function auditActions(purchaseId: string): Promise<string[]> {
  const { rows } = await sys.db.query('SELECT action FROM audit_log WHERE purchase_id = $1 ORDER BY id', [purchaseId]);
  return rows.map((r) => r.action as string);
}

async function eventRow(eventId: string) {
  const { rows } = await sys.db.query('SELECT status, purchase_id, why FROM webhook_events WHERE event_id = $1', [
    eventId,
  ]);
  return rows[0];
}

/** Pays the purchase's own session and waits for the sale. */
async function payOwn(t: ExecutionContext, purchaseId: string, sessionId: string) {
  t.is((await sys.pay(sessionId, 'succeeded')).status, 200);
  return sys.waitForPurchase(purchaseId, (r) => r.status === 'confirmed');
}

test("a signed event carrying a confirmed sale's session and naming another buyer's purchase refunds nothing", async (t) => {
  const sku = await sys.createProduct({ priceCents: 12_000, stock: 5 });
  const a = await buyAwaiting(sku, 'ada');
  const confirmed = await payOwn(t, a.purchaseId, a.sessionId);
  const { rows } = await sys.db.query('SELECT payment_intent_id FROM purchases WHERE purchase_id = $1', [a.purchaseId]);
  const paymentOfA = rows[0].payment_intent_id as string;
  t.truthy(paymentOfA);
  const b = await buyAwaiting(sku, 'bea');

  const forged = forgedCompleted(a.sessionId, b.purchaseId, paymentOfA, 12_000);
  const res = await postEvent(sys, forged);
  t.is(res.status, 200, JSON.stringify(res.body));
  t.regex(res.body.rejected ?? '', /is not this purchase's/);

  const { result, row } = await strayOutcome(a.sessionId);
  t.is(result.outcome, 'refused');
  t.like(row, { claimed_purchase: b.purchaseId, status: 'refused', refund_id: null });
  t.regex(row.detail, new RegExp(`purchase ${a.purchaseId}`));
  t.like(await eventRow(forged.id as string), { status: 'rejected', purchase_id: b.purchaseId });
  t.true((await auditActions(b.purchaseId)).includes('stray_refund_refused'));
  t.true((await auditActions(a.purchaseId)).includes('stray_refund_refused'));

  // No money moved: Stripe holds no refund of A's payment, and A's sale stands.
  t.deepEqual((await stripe().refunds.list({ payment_intent: paymentOfA })).data, []);
  const after = (await sys.purchase(a.purchaseId)).body;
  t.is(after.status, 'confirmed');
  t.is(after.refund_status ?? null, confirmed.refund_status ?? null);
  t.is((await sys.purchase(b.purchaseId)).body.status, 'awaiting_payment');
  t.like(await sys.stock(sku), { sold: 1, held: 1 });

  // The same event sent again finds the ended saga: answered, and still nothing moves.
  const again = await postEvent(sys, forged);
  t.is(again.status, 200, JSON.stringify(again.body));
  t.deepEqual((await stripe().refunds.list({ payment_intent: paymentOfA })).data, []);

  // B's own payment still confirms B.
  await payOwn(t, b.purchaseId, b.sessionId);
  t.is((await sys.purchase(a.purchaseId)).body.status, 'confirmed');
  t.like(await sys.stock(sku), { sold: 2, held: 0 });
  await assertInvariants(t, sys.db, sku);
});

test('a signed event carrying a paid session that names none of our purchases leaves its money alone', async (t) => {
  const sku = await sys.createProduct({ priceCents: 12_000 });
  const b = await buyAwaiting(sku, 'cai');
  // Another business on the account sells through a Payment Link: its session names no purchase of ours.
  const elsewhere = await foreignSession(sys, b.purchaseId, { amountCents: 12_000, referenceOnly: true });
  t.is((await sys.pay(elsewhere.id, 'succeeded')).status, 200);
  const paid = await stripe().checkout.sessions.retrieve(elsewhere.id);
  const payment = paid.payment_intent as string;
  t.truthy(payment);

  const forged = forgedCompleted(elsewhere.id, b.purchaseId, payment, 12_000);
  const res = await postEvent(sys, forged);
  t.is(res.status, 200, JSON.stringify(res.body));
  t.regex(res.body.rejected ?? '', /not opened by this purchase|is not this purchase's/);

  const { result, row } = await strayOutcome(elsewhere.id);
  t.is(result.outcome, 'refused');
  t.like(row, { status: 'refused', refund_id: null });
  t.regex(row.detail, /names no purchase of ours/);
  t.deepEqual((await stripe().refunds.list({ payment_intent: payment })).data, []);
  t.is((await sys.purchase(b.purchaseId)).body.status, 'awaiting_payment');
  await payOwn(t, b.purchaseId, b.sessionId);
  await assertInvariants(t, sys.db, sku);
});

test('money paid on a session that really names the purchase but is not its own is still refunded', async (t) => {
  const sku = await sys.createProduct({ priceCents: 12_000 });
  const b = await buyAwaiting(sku, 'dot');
  const foreign = await foreignSession(sys, b.purchaseId, { amountCents: 700 });
  t.is((await sys.pay(foreign.id, 'succeeded')).status, 200);
  const { result, row } = await strayOutcome(
    await until('the stray payment noted', async () => {
      const { rows } = await sys.db.query('SELECT 1 FROM stray_payments WHERE session_id = $1', [foreign.id]);
      return rows.length ? foreign.id : undefined;
    }),
  );
  t.is(result.outcome, 'refunded');
  t.like(row, { claimed_purchase: b.purchaseId, status: 'refunded' });
  const paid = await stripe().checkout.sessions.retrieve(foreign.id);
  const refunds = (await stripe().refunds.list({ payment_intent: paid.payment_intent as string })).data;
  t.is(refunds.length, 1);
  t.is(refunds[0].amount, 700);
  t.false((await auditActions(b.purchaseId)).includes('stray_refund_refused'));
  await payOwn(t, b.purchaseId, b.sessionId);
  await assertInvariants(t, sys.db, sku);
});

test.serial(
  'a stray payment whose refund fails after it succeeded, while its saga still finishes, is in front of support',
  async (t) => {
    const sku = await sys.createProduct();
    const { purchaseId } = await buyAwaiting(sku, 'stray-finishing');
    const foreign = await foreignSession(sys, purchaseId);
    const row = async () =>
      (await sys.db.query('SELECT status, refund_id, detail FROM stray_payments WHERE session_id = $1', [foreign.id]))
        .rows[0];
    /** Until a statement on the stray row (`like`) waits for the lock held here. */
    const waitingFor = (what: string, like: string) =>
      until(what, async () => {
        const { rows } = await sys.db.query(
          `SELECT 1 FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE $1`,
          [like],
        );
        return rows.length ? true : undefined;
      });
    // Refunds start pending: the saga follows the refund until Stripe says it succeeded.
    await sys.emulatorCall('POST', '/_emulator/settings', { refundStatus: 'pending' });
    const blocker = await sys.db.connect();
    try {
      t.is((await sys.pay(foreign.id, 'succeeded')).status, 200);
      const made = await until('the stray refund made', async () => {
        const r = await row();
        return r?.status === 'refunding' && r.refund_id ? r : undefined;
      });
      // The row locked here: the saga's word that the refund succeeded waits for it…
      await blocker.query('BEGIN');
      await blocker.query('SELECT 1 FROM stray_payments WHERE session_id = $1 FOR UPDATE', [foreign.id]);
      t.is((await sys.emulatorCall('POST', `/_emulator/refunds/${made.refund_id}/succeed`)).status, 200);
      await waitingFor('the saga writing refunded', '%UPDATE stray_payments%SET status = CASE%');
      // …and Stripe says meanwhile that the refund failed (the bank sent the money back).
      const failed = await sys.emulatorCall('POST', `/_emulator/refunds/${made.refund_id}/fail`, {});
      t.is(failed.status, 200, JSON.stringify(failed.body));
      await waitingFor('the webhook flagging it', `%SET status = 'needs_attention'%`);
    } finally {
      await blocker.query('ROLLBACK');
      blocker.release();
      await sys.emulatorCall('POST', '/_emulator/settings', { refundStatus: 'succeeded' });
    }
    await sys.temporal.workflow.getHandle(`stray-${foreign.id}`).result();
    // The saga's word that it succeeded came first; the failure after it is what the row says.
    const after = await row();
    t.is(after.status, 'needs_attention');
    t.regex(after.detail, /the refund failed/);
    await assertInvariants(t, sys.db, sku);
  },
);
