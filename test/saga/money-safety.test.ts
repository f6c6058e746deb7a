import test from 'ava';
import { assertInvariants } from '../helpers/db';
import { foreignSession } from '../helpers/attention';
import { ADMIN_TOKEN, sellTo, sessionOf, startSystem, type System } from '../helpers/system';
import { until } from '../helpers/poll';
import { postEvent as postSignedEvent, stripeEvent } from '../helpers/webhooks';

// Only a purchase's own payment pays for it, and no Stripe answer ends a paid saga without an
// outcome: foreign sessions, forged amounts, refused refunds and an expire endpoint that fails.

let sys: System;
test.before(async () => {
  sys = await startSystem();
});
test.after.always(async () => {
  await sys?.close();
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Refunds the emulator made whose metadata matches. */
async function refundsWhere(match: (metadata: Record<string, string>) => boolean): Promise<number> {
  const { body } = await sys.emulatorCall('GET', '/_emulator/events?type=refund.created');
  const events = body.data as { event: { data: { object: { metadata?: Record<string, string> } } } }[];
  return events.filter((e) => match(e.event.data.object.metadata ?? {})).length;
}
const ownRefunds = (purchaseId: string) =>
  refundsWhere((m) => m.purchase_id === purchaseId && m.refund_step !== 'stray');

/** Posts a signed event of `type` around `object` to the API's webhook, as Stripe would. */
const postEvent = (type: string, object: Record<string, unknown>, livemode = false) =>
  postSignedEvent(sys, stripeEvent(type, object, { livemode }));

async function buyAwaiting(sku: string, buyer: string) {
  const res = await sys.buy(sku, buyer);
  if (res.status !== 201) throw new Error(`buy: ${res.status} ${JSON.stringify(res.body)}`);
  return {
    purchaseId: res.body.purchaseId as string,
    sessionId: await sessionOf(sys.db, res.body.purchaseId),
    holdExpiresAt: res.body.holdExpiresAt as string,
  };
}

test('a paid foreign session naming a purchase confirms nothing, is refunded once, and the real session still pays', async (t) => {
  const sku = await sys.createProduct({ priceCents: 12_000 });
  const { purchaseId, sessionId } = await buyAwaiting(sku, 'fay');
  // Another app on the same Stripe account creates a 1-cent session that claims the purchase.
  const foreign = await foreignSession(sys, purchaseId);
  t.is((await sys.pay(foreign.id, 'succeeded')).status, 200);

  const deadline = Date.now() + 15_000;
  let stray;
  while (Date.now() < deadline) {
    const { rows } = await sys.db.query('SELECT * FROM stray_payments WHERE session_id = $1', [foreign.id]);
    stray = rows[0];
    if (stray?.status === 'refunded') break;
    await sleep(100);
  }
  t.like(stray, { claimed_purchase: purchaseId, status: 'refunded', amount_cents: '1' });
  t.regex(stray.why, /is not this purchase's/);
  t.is((await sys.purchase(purchaseId)).body.status, 'awaiting_payment');
  const { rows: rejected } = await sys.db.query(
    `SELECT type, why FROM webhook_events WHERE purchase_id = $1 AND status = 'rejected'`,
    [purchaseId],
  );
  t.true(rejected.some((r) => r.type === 'checkout.session.completed'));
  for (let i = 0; ; i++) {
    const { rows } = await sys.db.query(
      `SELECT 1 FROM audit_log WHERE purchase_id = $1 AND action = 'stray_payment_refunded'`,
      [purchaseId],
    );
    if (rows.length === 1) break;
    if (i > 100) {
      t.fail('the stray payment refund was never audited on the purchase it claimed');
      break;
    }
    await sleep(100);
  }

  await sys.pay(sessionId, 'succeeded');
  await sys.waitForPurchase(purchaseId, (r) => r.status === 'confirmed');
  await sleep(500); // any redelivery of the foreign session's events
  t.is(await refundsWhere((m) => m.session_id === foreign.id), 1);
  t.is(await ownRefunds(purchaseId), 0);
  t.like(await sys.stock(sku), { sold: 1, held: 0 });
  await assertInvariants(t, sys.db, sku);
});

test('a session elsewhere on the account that names a purchase only by client_reference_id is recorded and left alone', async (t) => {
  const sku = await sys.createProduct({ priceCents: 12_000 });
  const { purchaseId, sessionId } = await buyAwaiting(sku, 'flo');
  // A payer's Payment Link sets client_reference_id; only our sessions carry metadata.purchase_id.
  const other = await foreignSession(sys, purchaseId, { amountCents: 25_000, referenceOnly: true });
  t.is((await sys.pay(other.id, 'succeeded')).status, 200);
  const completed = await until('the emulator to deliver the completed event', async () => {
    const { body } = await sys.emulatorCall('GET', '/_emulator/events?type=checkout.session.completed');
    const events = body.data as {
      id: string;
      object_id: string;
      delivered: boolean;
      event: { data: { object: { payment_intent: string } } };
    }[];
    return events.find((e) => e.object_id === other.id && e.delivered);
  });
  const { rows: ignored } = await sys.db.query('SELECT status, purchase_id FROM webhook_events WHERE event_id = $1', [
    completed.id,
  ]);
  t.like(ignored[0], { status: 'ignored', purchase_id: null });

  await sys.pay(sessionId, 'succeeded');
  await sys.waitForPurchase(purchaseId, (r) => r.status === 'confirmed');
  await sleep(500); // any redelivery of the other session's events
  const { body: refunds } = await sys.emulatorCall('GET', '/_emulator/events?type=refund.created');
  const refunded = (refunds.data as { event: { data: { object: { payment_intent: string } } } }[]).filter(
    (e) => e.event.data.object.payment_intent === completed.event.data.object.payment_intent,
  );
  t.is(refunded.length, 0);
  const { rows: strays } = await sys.db.query('SELECT 1 FROM stray_payments WHERE session_id = $1', [other.id]);
  t.is(strays.length, 0);
  t.like(await sys.stock(sku), { sold: 1, held: 0 });
  await assertInvariants(t, sys.db, sku);
});

test('an event on the purchase own session with another amount, currency or mode is refused and flagged', async (t) => {
  const sku = await sys.createProduct({ priceCents: 12_000 });
  const { purchaseId, sessionId } = await buyAwaiting(sku, 'gus');
  const paid = {
    id: sessionId,
    object: 'checkout.session',
    metadata: { purchase_id: purchaseId },
    client_reference_id: purchaseId,
    payment_status: 'paid',
    status: 'complete',
    payment_intent: 'pi_forged',
    amount_total: 12_000,
    currency: 'usd',
  };
  const cases: [Record<string, unknown>, boolean, RegExp][] = [
    [{ ...paid, amount_total: 1 }, false, /amount 1 does not match the order's 12000/],
    [{ ...paid, currency: 'eur' }, false, /currency eur does not match/],
    [paid, true, /live mode/],
    [{ ...paid, id: 'cs_test_someone_else' }, false, /not this purchase's/],
  ];
  for (const [object, livemode, why] of cases) {
    const res = await postEvent('checkout.session.completed', object, livemode);
    t.is(res.status, 200, JSON.stringify(res.body));
    t.regex(res.body.rejected, why);
  }
  await sleep(1000);
  const view = await sys.purchase(purchaseId);
  t.is(view.body.status, 'awaiting_payment');
  const { rows } = await sys.db.query(
    `SELECT count(*)::int AS n FROM audit_log WHERE purchase_id = $1 AND action = 'payment_event_rejected'`,
    [purchaseId],
  );
  t.is(rows[0].n, 4);
  t.like(await sys.stock(sku), { sold: 0, held: 1 });
  // The real payment still confirms.
  await sys.pay(sessionId, 'succeeded');
  await sys.waitForPurchase(purchaseId, (r) => r.status === 'confirmed');
  await assertInvariants(t, sys.db, sku);
});

/** A lapsed purchase whose unit another buyer then bought: its payment can only be refunded. */
async function lateWithStockGone(buyer: string) {
  // Long enough for the session to open within it on a loaded machine.
  const sku = await sys.createProduct({ holdSeconds: 4, stock: 1 });
  const late = await buyAwaiting(sku, buyer);
  await sys.waitForPurchase(late.purchaseId, (r) => r.status === 'expired', 20_000);
  await sellTo(sys, sku, `${buyer}-winner`);
  return { sku, ...late };
}

test.serial('a late payment whose refund Stripe refuses once is refunded on the retry', async (t) => {
  const late = await lateWithStockGone('hal');
  await sys.emulatorCall('POST', '/_emulator/faults', { path: '/v1/refunds', method: 'POST', status: 400, count: 1 });
  await sys.pay(late.sessionId, 'succeeded', { force: true });
  const flagged = await sys.waitForPurchase(late.purchaseId, (r) => r.status === 'needs_attention');
  t.regex(flagged.reason, /refunding the payment: Stripe answered 400/);
  const p = await sys.waitForPurchase(late.purchaseId, (r) => r.status === 'refunded', 20_000);
  t.is(p.refund_status, 'succeeded');
  t.is(await ownRefunds(late.purchaseId), 1);
  await assertInvariants(t, sys.db, late.sku);
});

test.serial(
  'a late payment whose refund Stripe always refuses stays needs_attention with the money never kept silently',
  async (t) => {
    const late = await lateWithStockGone('ida');
    await sys.emulatorCall('POST', '/_emulator/faults', {
      path: '/v1/refunds',
      method: 'POST',
      status: 402,
      count: 1000,
    });
    try {
      await sys.pay(late.sessionId, 'succeeded', { force: true });
      const flagged = await sys.waitForPurchase(late.purchaseId, (r) => r.status === 'needs_attention');
      t.regex(flagged.reason, /Stripe answered 402/);
      await sleep(6000); // a retry on the saga's own schedule, refused again
      const still = await sys.purchase(late.purchaseId);
      t.is(still.body.status, 'needs_attention');
      const wf = await sys.temporal.workflow.getHandle(`purchase-${late.purchaseId}`).describe();
      t.is(wf.status.name, 'RUNNING');
    } finally {
      await sys.emulatorCall('DELETE', '/_emulator/faults');
    }
    // Stripe accepts again: the saga's next try refunds, once.
    const p = await sys.waitForPurchase(late.purchaseId, (r) => r.status === 'refunded', 30_000);
    t.is(p.refund_status, 'succeeded');
    t.is(await ownRefunds(late.purchaseId), 1);
    await assertInvariants(t, sys.db, late.sku);
  },
);

/** How many expire calls the armed faults refused (their hits). */
async function expireCalls(): Promise<number> {
  const { body } = await sys.emulatorCall('GET', '/_emulator/faults');
  return (body.data as { path: string; hits: number }[])
    .filter((f) => f.path.endsWith('/expire'))
    .reduce((n, f) => n + f.hits, 0);
}

/**
 * Makes every expire call fail with `status` until the faults are cleared: armed before the buy, so
 * the saga's first expire at a short hold's lapse cannot come before it.
 */
async function expireFails(status: number) {
  await sys.emulatorCall('POST', '/_emulator/faults', {
    path: '/v1/checkout/sessions/*/expire',
    method: 'POST',
    status,
    count: 10_000,
  });
}

test.serial(
  'with expire failing for good after the lapse, a payment is late_confirmed within 10 s while the unit is free',
  async (t) => {
    // Long enough for the session to open within it on a loaded machine.
    const sku = await sys.createProduct({ holdSeconds: 4, stock: 1 });
    await expireFails(500);
    try {
      const { purchaseId, sessionId } = await buyAwaiting(sku, 'jan');
      // The hold lapsed and the saga tried to expire the session (refused); it keeps retrying.
      await until('an expire of the lapsed session', async () => ((await expireCalls()) > 0 ? true : undefined));
      t.is((await sys.purchase(purchaseId)).body.status, 'awaiting_payment');
      const paidAt = Date.now();
      await sys.pay(sessionId, 'succeeded');
      const p = await sys.waitForPurchase(purchaseId, (r) => r.status === 'late_confirmed', 10_000);
      t.true(Date.now() - paidAt < 10_000);
      t.regex(p.reason, /paid after the hold lapsed/);
    } finally {
      await sys.emulatorCall('DELETE', '/_emulator/faults');
    }
    t.like(await sys.stock(sku), { sold: 1, held: 0, available: 0 });
    await assertInvariants(t, sys.db, sku);
  },
);

test.serial(
  'with expire refused (404) after the lapse and the unit sold to another, the payment is refunded within 10 s',
  async (t) => {
    // No grace: the unit of a saga that could not close its session is on sale again at the lapse.
    const sku = await sys.createProduct({ holdSeconds: 4, holdGraceSeconds: 0, stock: 1 });
    await expireFails(404);
    let first: Awaited<ReturnType<typeof buyAwaiting>> | undefined;
    try {
      first = await buyAwaiting(sku, 'kim');
      const flagged = await sys.waitForPurchase(first.purchaseId, (r) => r.status === 'needs_attention', 15_000);
      t.regex(flagged.reason, /expiring the Checkout Session: Stripe answered 404/);
      // The lapsed unit is back on sale (expiry is checked on read) and the next buyer takes it.
      await sellTo(sys, sku, 'kim-next');
      // The first buyer pays on the session Stripe never let us expire.
      const paidAt = Date.now();
      await sys.pay(first.sessionId, 'succeeded');
      const p = await sys.waitForPurchase(first.purchaseId, (r) => r.status === 'refunded', 10_000);
      t.true(Date.now() - paidAt < 10_000);
      t.regex(p.reason, /sold out/);
    } finally {
      await sys.emulatorCall('DELETE', '/_emulator/faults');
    }
    t.is(await ownRefunds(first.purchaseId), 1);
    t.like(await sys.stock(sku), { sold: 1, held: 0, available: 0 });
    await assertInvariants(t, sys.db, sku);
  },
);

test.serial(
  'an operator’s cancel while a late payment’s refund is on its way sells it no unit that came back',
  async (t) => {
    // No grace: the unit of a saga that could not close its session is on sale again at the lapse.
    const sku = await sys.createProduct({ holdSeconds: 4, holdGraceSeconds: 0, stock: 1 });
    await expireFails(404);
    let late: Awaited<ReturnType<typeof buyAwaiting>>;
    try {
      late = await buyAwaiting(sku, 'kit');
      await sys.waitForPurchase(late.purchaseId, (r) => r.status === 'needs_attention', 15_000);
      await sellTo(sys, sku, 'kit-next');
      await sys.emulatorCall('POST', '/_emulator/settings', { refundStatus: 'pending' });
      // Paid on the session Stripe never let the saga expire: no unit left, so it is refunded.
      await sys.pay(late.sessionId, 'succeeded');
      await sys.waitForPurchase(late.purchaseId, (r) => r.status === 'refunded' && r.refund_status === 'pending');
    } finally {
      await sys.emulatorCall('DELETE', '/_emulator/faults');
      await sys.emulatorCall('POST', '/_emulator/settings', { refundStatus: 'succeeded' });
    }
    // A unit comes back; then an operator cancels the saga that follows the refund. Stripe answers the
    // expire of the paid session with the session, which says paid: that is no new payment.
    const admin = { authorization: `Bearer ${ADMIN_TOKEN}` };
    t.is((await sys.api('POST', `/v1/products/${sku}/restock`, { quantity: 1 }, admin)).status, 200);
    const saga = sys.temporal.workflow.getHandle(`purchase-${late.purchaseId}`);
    await saga.cancel();
    await t.throwsAsync(saga.result());
    t.like((await sys.purchase(late.purchaseId)).body, { status: 'refunded' });
    const held = await sys.db.query('SELECT status FROM holds WHERE purchase_id = $1', [late.purchaseId]);
    t.false(
      held.rows.some((h) => h.status === 'sold'),
      JSON.stringify(held.rows),
    );
    t.like(await sys.stock(sku), { sold: 1, available: 1 }, 'the unit that came back is still for sale');
    t.is(await ownRefunds(late.purchaseId), 1);
    await assertInvariants(t, sys.db, sku);
  },
);

test.serial(
  'a payment made while the hold ran is a sale even when the saga only sees it after the lapse',
  async (t) => {
    // Long enough to stop the worker and pay a second before the lapse on a loaded machine.
    const sku = await sys.createProduct({ holdSeconds: 10, stock: 1 });
    const { purchaseId, sessionId, holdExpiresAt } = await buyAwaiting(sku, 'lou');
    await sys.stopWorker();
    try {
      await sys.pay(sessionId, 'succeeded');
      // In time as the saga counts it: Stripe's event times are whole seconds, and the saga takes the
      // payment to be made at the end of its second (`paidBy`), which must come before the hold's end.
      const paidBy = Math.floor(Date.now() / 1000) * 1000 + 999;
      if (paidBy >= Date.parse(holdExpiresAt))
        throw new Error(`paid too late for the test: hold ended ${holdExpiresAt}`);
      // The webhook reached the API at once, which handed the event to the saga's history (`delivered`:
      // `received` lasts only until then); the saga is down until after the hold's end.
      await until('the webhook handed to the saga', async () => {
        const { rows } = await sys.db.query(
          `SELECT 1 FROM webhook_events WHERE purchase_id = $1 AND status = 'delivered'`,
          [purchaseId],
        );
        return rows.length ? true : undefined;
      });
      await sleep(Date.parse(holdExpiresAt) - Date.now() + 500);
      // The next buyer's take returns lapsed holds to stock first: this one is kept for its payment.
      await sys.db.query('SELECT reclaim_expired($1)', [sku]);
      t.like(await sys.stock(sku), { available: 0, held: 1 });
    } finally {
      await sys.startWorker();
    }
    const p = await sys.waitForPurchase(purchaseId, (r) => !['holding', 'awaiting_payment'].includes(r.status));
    t.is(p.status, 'confirmed', p.reason);
    t.is(await ownRefunds(purchaseId), 0);
    t.like(await sys.stock(sku), { sold: 1, held: 0, available: 0 });
    await assertInvariants(t, sys.db, sku);
  },
);
