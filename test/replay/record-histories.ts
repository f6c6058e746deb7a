// Records purchase workflow histories for the replay test, one per saga branch. Run against the test
// stack when the workflow changes on purpose (a new version of the saga):
//   DATABASE_URL=... TEMPORAL_ADDRESS=... npx tsx test/replay/record-histories.ts
// and commit the files in test/replay/histories/. Keep the histories of the previous version beside
// them (suffix -v1, ...): sagas started before a change must still replay.
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { historyToJSON } from '@temporalio/common/lib/proto-utils';
import { purchaseWorkflowId, refundWorkflowId } from '../../vocabulary';
import { sessionOf, startSystem, SUPPORT_TOKEN } from '../helpers/system';

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
  } finally {
    await sys.close();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
