import test from 'ava';
import { signWebhookPayload } from '@flash-sale/stripe-emulator';
import { purchaseWorkflowId } from '../../vocabulary';
import { sessionOf, startSystem, WEBHOOK_SECRET, type System } from '../helpers/system';

// Found by the chaos run (test/saga/chaos.test.ts): with webhooks shuffled, the
// `checkout.session.completed` of a delayed payment (payment_status unpaid) can arrive after its
// `async_payment_succeeded`, once the purchase is already confirmed and its workflow closed.

/** Sends one of the emulator's events to the API ourselves, signed, in the order the test wants. */
async function deliver(sys: System, event: unknown): Promise<number> {
  const payload = JSON.stringify(event);
  const res = await fetch(`${sys.apiUrl}/v1/webhooks/stripe`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'stripe-signature': signWebhookPayload(payload, WEBHOOK_SECRET, Math.floor(Date.now() / 1000)),
    },
    body: payload,
  });
  return res.status;
}

test('a delayed payment whose completed event arrives after it settled leaves no saga running', async (t) => {
  const sys = await startSystem();
  const running: { workflowId: string; runId: string }[] = [];
  try {
    const sku = await sys.createProduct({ stock: 1 });
    const bought = await sys.buy(sku, 'stale-completed');
    t.is(bought.status, 201);
    const { purchaseId } = bought.body;
    const session = await sessionOf(sys.db, purchaseId);
    // Hold every webhook: this test hands them over itself, in the order a shuffled delivery may take.
    await sys.emulatorCall('POST', '/_emulator/webhooks', { pause: true });
    t.is((await sys.pay(session, 'async_pending')).status, 200);
    t.is((await sys.pay(session, 'async_succeeded')).status, 200);
    const { body } = await sys.emulatorCall('GET', '/_emulator/events');
    const ofSession = (type: string) =>
      body.data.find((e: any) => e.object_id === session && e.type === type)?.event as unknown;
    const completed = ofSession('checkout.session.completed');
    t.truthy(completed);

    t.is(await deliver(sys, ofSession('checkout.session.async_payment_succeeded')), 200);
    await sys.waitForPurchase(purchaseId, (p) => p.status === 'confirmed');
    const handle = sys.temporal.workflow.getHandle(purchaseWorkflowId(purchaseId));
    await handle.result();

    t.is(await deliver(sys, completed), 200);
    await new Promise((r) => setTimeout(r, 2000));
    const query = `WorkflowId="${purchaseWorkflowId(purchaseId)}" AND ExecutionStatus="Running"`;
    for await (const run of sys.temporal.workflow.list({ query })) running.push(run);
    t.is((await sys.waitForPurchase(purchaseId, () => true)).status, 'confirmed');
    t.deepEqual(
      running.map((r) => r.runId),
      [],
      'no run left waiting for a payment that already settled',
    );
  } finally {
    // A run left waiting (7 days) is ended here, so it does not linger on the shared server.
    for (const r of running) await sys.temporal.workflow.getHandle(r.workflowId, r.runId).terminate('test over');
    await sys.emulatorCall('POST', '/_emulator/webhooks', { pause: false });
    await sys.close();
  }
});

/** Why the API recorded a purchase's event of `type` as ignored, once it has. */
async function ignoredAs(sys: System, purchaseId: string, type: string): Promise<string> {
  for (const deadline = Date.now() + 10_000; Date.now() < deadline;) {
    const { rows } = await sys.db.query<{ status: string; why: string | null }>(
      'SELECT status, why FROM webhook_events WHERE purchase_id = $1 AND type = $2',
      [purchaseId, type],
    );
    if (rows[0] && rows[0].status !== 'received') {
      if (rows[0].status !== 'ignored') throw new Error(`${type} of ${purchaseId} was ${rows[0].status}`);
      return rows[0].why ?? '';
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`no ${type} of ${purchaseId} recorded within 10 s`);
}

/** Every run of a purchase's workflow id, and the signals in each run's history. */
async function runsOf(sys: System, purchaseId: string): Promise<Array<{ runId: string; signals: number }>> {
  const runs: Array<{ runId: string; signals: number }> = [];
  const workflowId = purchaseWorkflowId(purchaseId);
  for await (const run of sys.temporal.workflow.list({ query: `WorkflowId="${workflowId}"` })) {
    const history = await sys.temporal.workflow.getHandle(workflowId, run.runId).fetchHistory();
    const signals = (history.events ?? []).filter((e) => e.workflowExecutionSignaledEventAttributes).length;
    runs.push({ runId: run.runId, signals });
  }
  return runs;
}

test('a payment the saga confirmed from Stripe’s answer starts no follow-up run when its webhook comes', async (t) => {
  const sys = await startSystem();
  try {
    // Long enough to pay before the lapse on a loaded machine.
    const sku = await sys.createProduct({ stock: 1, holdSeconds: 5 });
    const bought = await sys.buy(sku, 'confirmed-by-the-expire');
    t.is(bought.status, 201);
    const { purchaseId } = bought.body;
    const session = await sessionOf(sys.db, purchaseId);
    // The webhook is late: the hold lapses, the saga's expire finds the session paid and confirms.
    await sys.emulatorCall('POST', '/_emulator/webhooks', { pause: true });
    t.is((await sys.pay(session, 'succeeded')).status, 200);
    await sys.waitForPurchase(purchaseId, (p) => p.status === 'confirmed');
    await sys.temporal.workflow.getHandle(purchaseWorkflowId(purchaseId)).result();

    await sys.emulatorCall('POST', '/_emulator/webhooks', { pause: false });
    t.is(await ignoredAs(sys, purchaseId, 'checkout.session.completed'), "the session's payment is already settled");
    const runs = await runsOf(sys, purchaseId);
    t.is(runs.length, 1, 'one run: the paid event was recorded, not handed to a new run');
    t.is((await sys.waitForPurchase(purchaseId, () => true)).status, 'confirmed');
  } finally {
    await sys.emulatorCall('POST', '/_emulator/webhooks', { pause: false });
    await sys.close();
  }
});

test('a lapsed saga is not woken by the expiry it asked Stripe for', async (t) => {
  const sys = await startSystem();
  try {
    const sku = await sys.createProduct({ stock: 1, holdSeconds: 4 });
    const bought = await sys.buy(sku, 'lapses-unpaid');
    t.is(bought.status, 201);
    const { purchaseId } = bought.body;
    await sys.waitForPurchase(purchaseId, (p) => p.status === 'expired');
    await sys.temporal.workflow.getHandle(purchaseWorkflowId(purchaseId)).result();
    // The session's checkout.session.expired reached the API and stopped there, whenever it came.
    t.regex(await ignoredAs(sys, purchaseId, 'checkout.session.expired'), /closes the session itself|closed/);
    t.deepEqual(
      (await runsOf(sys, purchaseId)).map((r) => r.signals),
      [0],
    );
  } finally {
    await sys.close();
  }
});
