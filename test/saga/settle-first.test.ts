import { randomUUID } from 'node:crypto';
import test from 'ava';
import { assertInvariants } from '../helpers/db';
import { asBuyer, sessionOf, startSystem, type System } from '../helpers/system';

// A paid buyer's confirmation must not wait behind the checkout steps of the buyers who came after.
// New purchases take their hold in their first workflow task (a local activity) and open their session
// on the Stripe queue; the settlement steps are activities at a higher Temporal priority, and the
// payment's workflow task goes to the worker that has the saga cached, not behind the new purchases'.

let sys: System;
test.before(async () => {
  sys = await startSystem({ worker: false });
  // One activity, one local activity and one Stripe call at a time, four workflow tasks: the backlog's
  // sessions queue for the one Stripe slot (and its tasks fill the workflow task slots) while the payment comes.
  await sys.startWorker({
    maxConcurrentActivities: 1,
    maxConcurrentLocalActivities: 1,
    maxConcurrentStripeCalls: 1,
    maxConcurrentWorkflowTasks: 4,
  });
});
test.after.always(async () => sys?.close());

const BACKLOG = 24;
// Slow enough that the confirmation has about 7 s before half the queue slips past it (one slot).
const CHECKOUT_LATENCY_MS = 600;

test('a payment is confirmed ahead of a backlog of new purchases still waiting to open their checkout', async (t) => {
  const sku = await sys.createProduct({ stock: BACKLOG + 1 });
  const first = await sys.buy(sku, 'early-eve');
  t.is(first.status, 201);
  const purchaseId: string = first.body.purchaseId;

  // Every new session now takes 600 ms to open: with one Stripe slot, the backlog takes seconds.
  const fault = await sys.emulatorCall('POST', '/_emulator/faults', {
    path: '/v1/checkout/sessions',
    method: 'POST',
    latencyMs: CHECKOUT_LATENCY_MS,
    count: BACKLOG,
  });
  t.is(fault.status, 201, JSON.stringify(fault.body));
  const later: string[] = [];
  for (let i = 0; i < BACKLOG; i++) {
    const res = await sys.api(
      'POST',
      '/v1/purchases',
      { sku },
      { 'idempotency-key': randomUUID(), prefer: 'respond-async', ...(await asBuyer(`later-${i}`)) },
    );
    t.is(res.status, 202, JSON.stringify(res.body));
    later.push(res.body.purchaseId);
  }
  // Let the backlog form on the server before the payment arrives.
  await waitUntil(async () => (await openedCount(later)) >= 1, 15_000);

  const openedAtPayment = await openedCount(later);
  t.is((await sys.pay(await sessionOf(sys.db, purchaseId), 'succeeded')).status, 200);
  await sys.waitForPurchase(purchaseId, (p) => p.status === 'confirmed', 30_000);
  const slipped = (await openedCount(later)) - openedAtPayment;
  const queued = BACKLOG - openedAtPayment;
  t.log(`${queued} checkouts were queued when the payment arrived; ${slipped} opened before its confirmation`);
  // FIFO runs every queued checkout first (slipped = queued); with priority only the ones that held
  // the single slot while each settlement step waited for it slip in.
  t.true(slipped <= queued / 2, `${slipped} of ${queued} queued checkouts opened before the confirmation`);

  for (const id of later) await sys.waitForPurchase(id, (p) => p.status === 'awaiting_payment', 60_000);
  await assertInvariants(t, sys.db, sku);
});

async function openedCount(ids: string[]): Promise<number> {
  const { rows } = await sys.db.query(
    `SELECT count(*)::int AS n FROM purchases WHERE purchase_id = ANY($1) AND checkout_session_id IS NOT NULL`,
    [ids],
  );
  return rows[0].n;
}

async function waitUntil(cond: () => Promise<boolean>, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await cond())) {
    if (Date.now() > deadline) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 50));
  }
}
