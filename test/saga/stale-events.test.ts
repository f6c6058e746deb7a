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
