// Records purchase workflow histories for the replay test, one per saga branch. Run against the test
// stack when the workflow changes on purpose (a new version of the saga):
//   DATABASE_URL=... TEMPORAL_ADDRESS=... npx tsx test/replay/record-histories.ts
// and commit the files in test/replay/histories/. Keep the histories of the previous version beside
// them (suffix -v1, ...): sagas started before a change must still replay.
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { historyToJSON } from '@temporalio/common/lib/proto-utils';
import { createStripe } from '../../config/clients';
import { purchaseWorkflowId, refundWorkflowId, strayPaymentWorkflowId } from '../../vocabulary';
import { SESSION_ANSWERS_LOST, sessionOf, startSystem, SUPPORT_TOKEN } from '../helpers/system';

async function main(): Promise<void> {
  const sys = await startSystem();
  const out = path.join(__dirname, 'histories');
  const save = async (name: string, workflowId: string) => {
    const history = await sys.temporal.workflow.getHandle(workflowId).fetchHistory();
    writeFileSync(path.join(out, `${name}.json`), historyToJSON(history));
    console.log(`recorded ${name} (${history.events?.length} events)`);
  };
  const final = (r: { status: string }) => !['holding', 'awaiting_payment'].includes(r.status);
  try {
    const sku = await sys.createProduct({ stock: 3 });
    const paid = await sys.buy(sku, 'replay-paid');
    await sys.pay(await sessionOf(sys.db, paid.body.purchaseId), 'succeeded');
    await sys.waitForPurchase(paid.body.purchaseId, final);
    await sys.api(
      'POST',
      `/v1/support/purchases/${paid.body.purchaseId}/refund`,
      { reason: 'replay', restock: true },
      {
        authorization: `Bearer ${SUPPORT_TOKEN}`,
      },
    );
    await sys.waitForPurchase(paid.body.purchaseId, (r) => r.status === 'refunded');

    const declined = await sys.buy(sku, 'replay-declined');
    const declinedSession = await sessionOf(sys.db, declined.body.purchaseId);
    await sys.pay(declinedSession, 'declined');
    await sys.waitForPurchase(declined.body.purchaseId, (r) => r.reason !== null);
    await sys.pay(declinedSession, 'succeeded');
    await sys.waitForPurchase(declined.body.purchaseId, final);

    const asyncPaid = await sys.buy(sku, 'replay-async');
    const s = await sessionOf(sys.db, asyncPaid.body.purchaseId);
    await sys.pay(s, 'async_pending');
    await sys.pay(s, 'async_succeeded');
    await sys.waitForPurchase(asyncPaid.body.purchaseId, final);

    const cancelled = await sys.buy(sku, 'replay-operator-cancel');
    await sys.temporal.workflow.getHandle(purchaseWorkflowId(cancelled.body.purchaseId)).cancel();
    await sys.waitForPurchase(cancelled.body.purchaseId, final);

    const slow = await sys.createProduct({ stock: 1, holdSeconds: 1 });
    const pending = await sys.buy(slow, 'replay-pending');
    const pendingSession = await sessionOf(sys.db, pending.body.purchaseId);
    await sys.pay(pendingSession, 'async_pending');
    await sys.waitForPurchase(pending.body.purchaseId, (r) => /settling/.test(r.reason ?? ''));
    await new Promise((r) => setTimeout(r, 1500));
    await sys.pay(pendingSession, 'async_succeeded');
    await sys.waitForPurchase(pending.body.purchaseId, final);

    const short = await sys.createProduct({ stock: 1, holdSeconds: 1 });
    const late = await sys.buy(short, 'replay-late');
    await sys.waitForPurchase(late.body.purchaseId, final);
    const winner = await sys.buy(short, 'replay-winner');
    await sys.pay(await sessionOf(sys.db, late.body.purchaseId), 'succeeded', { force: true });
    await sys.waitForPurchase(late.body.purchaseId, (r) => r.status === 'refunded');
    await sys.pay(await sessionOf(sys.db, winner.body.purchaseId), 'succeeded');
    await sys.waitForPurchase(winner.body.purchaseId, final);

    await save('paid-in-time', purchaseWorkflowId(paid.body.purchaseId));
    await save('support-refund', refundWorkflowId(paid.body.purchaseId));
    await save('declined-then-paid', purchaseWorkflowId(declined.body.purchaseId));
    await save('async-paid', purchaseWorkflowId(asyncPaid.body.purchaseId));
    await save('paid-winner', purchaseWorkflowId(winner.body.purchaseId));
    await save('operator-cancel', purchaseWorkflowId(cancelled.body.purchaseId));
    await save('delayed-payment-held-past-hold', purchaseWorkflowId(pending.body.purchaseId));
    // The late payment may reach the first run or, once it closed, a follow-up run of the same id: keep every run.
    let n = 0;
    for await (const run of sys.temporal.workflow.list({
      query: `WorkflowId = "${purchaseWorkflowId(late.body.purchaseId)}"`,
    })) {
      const history = await sys.temporal.workflow.getHandle(run.workflowId, run.runId).fetchHistory();
      writeFileSync(path.join(out, `lapsed-then-late-refund-run${++n}.json`), historyToJSON(history));
      console.log(`recorded lapsed-then-late-refund-run${n} (${history.events?.length} events)`);
    }

    // Stripe refuses the late payment's refund once: needs_attention, then refunded on the retry.
    const tight = await sys.createProduct({ stock: 1, holdSeconds: 1 });
    const refused = await sys.buy(tight, 'replay-refused');
    await sys.waitForPurchase(refused.body.purchaseId, final);
    const taker = await sys.buy(tight, 'replay-taker');
    await sys.pay(await sessionOf(sys.db, taker.body.purchaseId), 'succeeded');
    await sys.waitForPurchase(taker.body.purchaseId, final);
    await sys.emulatorCall('POST', '/_emulator/faults', { path: '/v1/refunds', method: 'POST', status: 400 });
    await sys.pay(await sessionOf(sys.db, refused.body.purchaseId), 'succeeded', { force: true });
    await sys.waitForPurchase(refused.body.purchaseId, (r) => r.status === 'refunded', 30_000);

    // Expire keeps failing after the lapse and the buyer pays: the payment wins the race.
    const racing = await sys.createProduct({ stock: 1, holdSeconds: 1 });
    const raced = await sys.buy(racing, 'replay-raced');
    const racedSession = await sessionOf(sys.db, raced.body.purchaseId);
    await sys.emulatorCall('POST', '/_emulator/faults', {
      path: `/v1/checkout/sessions/${racedSession}/expire`,
      status: 500,
      count: 1000,
    });
    await new Promise((r) => setTimeout(r, 2500));
    await sys.pay(racedSession, 'succeeded');
    await sys.waitForPurchase(raced.body.purchaseId, final);
    await sys.emulatorCall('DELETE', '/_emulator/faults');

    // A refund that starts pending and then succeeds, followed by the support refund saga.
    await sys.emulatorCall('POST', '/_emulator/settings', { refundStatus: 'pending' });
    const followed = await sys.buy(await sys.createProduct({ stock: 1 }), 'replay-followed');
    await sys.pay(await sessionOf(sys.db, followed.body.purchaseId), 'succeeded');
    await sys.waitForPurchase(followed.body.purchaseId, final);
    await sys.api(
      'POST',
      `/v1/support/purchases/${followed.body.purchaseId}/refund`,
      { reason: 'replay', restock: true },
      { authorization: `Bearer ${SUPPORT_TOKEN}` },
    );
    const pendingRefund = await sys.waitForPurchase(followed.body.purchaseId, (r) => r.refund_id !== null);
    await sys.emulatorCall('POST', `/_emulator/refunds/${pendingRefund.refund_id}/succeed`);
    await sys.waitForPurchase(followed.body.purchaseId, (r) => r.refund_status === 'succeeded');
    await sys.emulatorCall('POST', '/_emulator/settings', { refundStatus: 'succeeded' });

    // Money on a foreign session that claims a purchase: refunded by the stray-payment saga.
    const claimed = await sys.buy(await sys.createProduct({ stock: 1 }), 'replay-claimed');
    const other = createStripe({ stripeSecretKey: 'sk_test_replay_other', stripeApiUrl: sys.emulator.url });
    const foreign = await other.checkout.sessions.create({
      mode: 'payment',
      line_items: [{ quantity: 1, price_data: { currency: 'usd', unit_amount: 1, product_data: { name: 'x' } } }],
      success_url: 'https://example.com/ok',
      metadata: { purchase_id: claimed.body.purchaseId },
    });
    await sys.pay(foreign.id, 'succeeded');
    for (let i = 0; i < 200; i++) {
      const { rows } = await sys.db.query('SELECT status FROM stray_payments WHERE session_id = $1', [foreign.id]);
      if (rows[0]?.status === 'refunded') break;
      await new Promise((r) => setTimeout(r, 100));
    }
    await sys.temporal.workflow.getHandle(strayPaymentWorkflowId(foreign.id)).result();

    // Every answer of the session step lost (served, then 500): the saga fails, then expires the
    // session Stripe opened anyway.
    await sys.emulatorCall('POST', '/_emulator/faults', SESSION_ANSWERS_LOST);
    const lost = await sys.buy(await sys.createProduct({ stock: 1 }), 'replay-answers-lost');
    await sys.temporal.workflow.getHandle(purchaseWorkflowId(lost.body.purchaseId)).result();

    await save('session-answers-lost', purchaseWorkflowId(lost.body.purchaseId));
    await save('late-refund-refused-then-retried', purchaseWorkflowId(refused.body.purchaseId));
    await save('expire-failing-payment-raced', purchaseWorkflowId(raced.body.purchaseId));
    await save('support-refund-pending-then-succeeded', refundWorkflowId(followed.body.purchaseId));
    await save('stray-payment-refunded', strayPaymentWorkflowId(foreign.id));
  } finally {
    await sys.close();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
