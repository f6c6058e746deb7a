// Records the saga histories that test/fast/replay/replay.test.ts replays: one per path of the sagas worth
// keeping, each checked to have ended the way its name says. Run it when a change alters the saga's
// commands on purpose (behind `patched()`, see docs/architecture.md, "Changing a saga"):
//   npx tsx test/replay/record-histories.ts
// It starts a throwaway stack (as `npm test` does; DATABASE_URL and TEMPORAL_ADDRESS name one of yours
// instead) and writes test/replay/histories/<package.json version>/. Bump the version first: the
// folder of the previous generation stays beside the new one until its patches are deprecated.
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { historyToJSON } from '@temporalio/common/lib/proto-utils';
import { createStripe } from '../../config/clients';
import { startStack } from '../../dev/stack';
import { purchaseWorkflowId, refundWorkflowId, strayPaymentWorkflowId } from '../../vocabulary';
import { RECORDED_PATHS, type RecordedPath } from './paths';
import {
  ADMIN_TOKEN,
  asBuyer,
  SESSION_ANSWERS_LOST,
  sellTo,
  sessionOf,
  startSystem,
  SUPPORT_TOKEN,
  type System,
} from '../helpers/system';

const { version } = JSON.parse(fs.readFileSync(path.join(__dirname, '..', '..', 'package.json'), 'utf8')) as {
  version: string;
};
const out = path.join(__dirname, 'histories', version);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const final = (r: { status: string }) => !['holding', 'awaiting_payment', 'needs_attention'].includes(r.status);

async function main(): Promise<void> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'flash-sale-record-'));
  // When run as root, Postgres runs as the `postgres` user, which must be able to enter this folder.
  fs.chmodSync(dataDir, 0o711);
  const stack = await startStack({ dataDir, persistent: false, log: () => {} });
  Object.assign(process.env, {
    DATABASE_URL: stack.databaseUrl,
    TEMPORAL_ADDRESS: stack.temporalAddress,
    TEMPORAL_NAMESPACE: stack.temporalNamespace,
  });
  const sys = await startSystem();
  fs.rmSync(out, { recursive: true, force: true });
  fs.mkdirSync(out, { recursive: true });
  try {
    const recorded = await recordAll(sys);
    const missing = RECORDED_PATHS.filter((p) => !recorded.has(p));
    if (missing.length > 0) throw new Error(`not recorded: ${missing.join(', ')}`);
  } finally {
    await sys.close();
    await stack.stop();
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

async function recordAll(sys: System): Promise<Set<RecordedPath>> {
  const recorded = new Set<RecordedPath>();
  const writeRun = async (name: RecordedPath, workflowId: string) => {
    const history = await sys.temporal.workflow.getHandle(workflowId).fetchHistory();
    fs.writeFileSync(path.join(out, `${name}.json`), historyToJSON(history));
    recorded.add(name);
    console.log(`recorded ${version}/${name} (${history.events?.length} events)`);
  };
  /** Waits for the purchase's record to reach `status` and its saga to end, and records its (last) run. */
  const record = async (name: RecordedPath, purchaseId: string, status: string, timeoutMs?: number) => {
    await sys.waitForPurchase(purchaseId, (r) => r.status === status, timeoutMs);
    await sys.temporal.workflow.getHandle(purchaseWorkflowId(purchaseId)).result();
    await writeRun(name, purchaseWorkflowId(purchaseId));
  };
  /** Waits until the saga gave the unit back and its run closed: a payment now starts a follow-up run. */
  const lapse = async (purchaseId: string) => {
    await sys.waitForPurchase(purchaseId, (r) => r.status === 'expired', 20_000);
    await sys.temporal.workflow.getHandle(purchaseWorkflowId(purchaseId)).result();
  };
  const buy = async (sku: string, buyer: string) => {
    const res = await sys.buy(sku, buyer);
    if (res.status !== 201) throw new Error(`buying ${sku} as ${buyer}: ${res.status} ${JSON.stringify(res.body)}`);
    return { id: res.body.purchaseId as string, session: await sessionOf(sys.db, res.body.purchaseId) };
  };
  const short = (stock = 1) => sys.createProduct({ stock, holdSeconds: 2 });
  const supportRefund = (purchaseId: string) =>
    sys.api(
      'POST',
      `/v1/support/purchases/${purchaseId}/refund`,
      { reason: 'replay', restock: true },
      { authorization: `Bearer ${SUPPORT_TOKEN}` },
    );

  const sku = await sys.createProduct({ stock: 10 });

  // Paid in time; then support refunds it and puts the unit back on sale.
  const paid = await buy(sku, 'replay-paid');
  await sys.pay(paid.session, 'succeeded');
  await record('paid-in-time', paid.id, 'confirmed');
  await supportRefund(paid.id);
  await sys.waitForPurchase(paid.id, (r) => r.status === 'refunded');
  await sys.temporal.workflow.getHandle(refundWorkflowId(paid.id)).result();
  await writeRun('support-refund', refundWorkflowId(paid.id));
  // That refund fails days later (its saga has ended): support asks again and it is made again.
  const { refund_id: failing } = await sys.waitForPurchase(paid.id, (r) => r.refund_status === 'succeeded');
  await sys.emulatorCall('POST', `/_emulator/refunds/${failing}/fail`, {});
  await sys.waitForPurchase(paid.id, (r) => r.status === 'needs_attention');
  await supportRefund(paid.id);
  await sys.waitForPurchase(paid.id, (r) => r.status === 'refunded' && r.refund_id !== failing);
  await sys.temporal.workflow.getHandle(refundWorkflowId(paid.id)).result();
  await writeRun('refund-failed-then-made-again', refundWorkflowId(paid.id));

  // Declined, then paid on the same session.
  const declined = await buy(sku, 'replay-declined');
  await sys.pay(declined.session, 'declined');
  await sys.waitForPurchase(declined.id, (r) => r.reason !== null);
  await sys.pay(declined.session, 'succeeded');
  await record('declined-then-paid', declined.id, 'confirmed');

  // Declined, and the hold lapsed with no other try.
  const declinedOut = await buy(await short(), 'replay-declined-out');
  await sys.pay(declinedOut.session, 'declined');
  await record('declined-until-lapse', declinedOut.id, 'payment_failed', 20_000);

  // A delayed payment method: completed in time, settled later, one way or the other.
  const asyncPaid = await buy(sku, 'replay-async');
  await sys.pay(asyncPaid.session, 'async_pending');
  await sys.pay(asyncPaid.session, 'async_succeeded');
  await record('delayed-payment-succeeded', asyncPaid.id, 'confirmed');
  const asyncFailed = await buy(sku, 'replay-async-failed');
  await sys.pay(asyncFailed.session, 'async_pending');
  // Settling (the unit held for it) before it fails: the path through the wait for it, every time.
  await sys.waitForPurchase(asyncFailed.id, (r) => /settling/.test(r.reason ?? ''));
  await sys.pay(asyncFailed.session, 'async_failed');
  await record('delayed-payment-failed', asyncFailed.id, 'payment_failed');
  // Completed in time, settled after the hold's end: the unit was kept for it.
  const pending = await buy(await short(), 'replay-pending');
  await sys.pay(pending.session, 'async_pending');
  await sys.waitForPurchase(pending.id, (r) => /settling/.test(r.reason ?? ''));
  await sleep(2500);
  await sys.pay(pending.session, 'async_succeeded');
  await record('delayed-payment-held-past-hold', pending.id, 'confirmed');

  // The buyer cancels; an operator cancels.
  const buyerCancel = await buy(sku, 'replay-buyer-cancel');
  await sys.api('POST', `/v1/purchases/${buyerCancel.id}/cancel`, undefined, await asBuyer('replay-buyer-cancel'));
  await record('buyer-cancel', buyerCancel.id, 'expired');
  const cancelled = await buy(sku, 'replay-operator-cancel');
  await sys.temporal.workflow.getHandle(purchaseWorkflowId(cancelled.id)).cancel();
  await sys.waitForPurchase(cancelled.id, (r) => r.status === 'failed');
  await sys.temporal.workflow
    .getHandle(purchaseWorkflowId(cancelled.id))
    .result()
    .catch(() => {});
  await writeRun('operator-cancel', purchaseWorkflowId(cancelled.id));

  // The hold lapses unpaid; later, a late payment re-takes a free unit.
  const lapsed = await buy(await short(2), 'replay-lapsed');
  await record('lapsed', lapsed.id, 'expired', 20_000);
  await sys.pay(lapsed.session, 'succeeded', { force: true });
  await record('late-payment-retaken', lapsed.id, 'late_confirmed', 30_000);

  // The hold lapses unpaid, another buyer takes the last unit and pays, then the late payment comes:
  // it is refunded; again with Stripe refusing the refund once (needs_attention, then refunded on the retry).
  const lateAfterUnitGone = async (name: RecordedPath, buyer: string, beforePaying: () => Promise<unknown>) => {
    const gone = await short();
    const late = await buy(gone, buyer);
    await lapse(late.id);
    const winner = await buy(gone, `${buyer}-winner`);
    await sys.pay(winner.session, 'succeeded');
    await sys.waitForPurchase(winner.id, final);
    await beforePaying();
    await sys.pay(late.session, 'succeeded', { force: true });
    await record(name, late.id, 'refunded', 30_000);
  };
  await lateAfterUnitGone('late-payment-refunded', 'replay-late', async () => {});
  await lateAfterUnitGone('late-refund-refused-then-retried', 'replay-refused', () =>
    sys.emulatorCall('POST', '/_emulator/faults', { path: '/v1/refunds', method: 'POST', status: 400 }),
  );

  // Expire keeps failing after the lapse and the buyer pays meanwhile: the payment wins the race.
  const raced = await buy(await short(), 'replay-raced');
  await sys.emulatorCall('POST', '/_emulator/faults', {
    path: `/v1/checkout/sessions/${raced.session}/expire`,
    status: 500,
    count: 1000,
  });
  await sleep(3000);
  await sys.pay(raced.session, 'succeeded');
  await record('expire-failing-payment-raced', raced.id, 'late_confirmed');
  await sys.emulatorCall('DELETE', '/_emulator/faults');

  // Expire refused after the lapse, the unit sold to another, the buyer pays: the refund is on its way
  // when a unit comes back and an operator cancels the saga (the refund is kept, nothing sold).
  const kept = await sys.createProduct({ stock: 1, holdSeconds: 2, holdGraceSeconds: 0 });
  await sys.emulatorCall('POST', '/_emulator/faults', {
    path: '/v1/checkout/sessions/*/expire',
    method: 'POST',
    status: 404,
    count: 1000,
  });
  const keptLate = await buy(kept, 'replay-kept');
  await sys.waitForPurchase(keptLate.id, (r) => r.status === 'needs_attention', 20_000);
  await sellTo(sys, kept, 'replay-kept-winner');
  await sys.emulatorCall('POST', '/_emulator/settings', { refundStatus: 'pending' });
  await sys.pay(keptLate.session, 'succeeded');
  await sys.waitForPurchase(keptLate.id, (r) => r.status === 'refunded');
  await sys.emulatorCall('DELETE', '/_emulator/faults');
  await sys.emulatorCall('POST', '/_emulator/settings', { refundStatus: 'succeeded' });
  await sys.api('POST', `/v1/products/${kept}/restock`, { quantity: 1 }, { authorization: `Bearer ${ADMIN_TOKEN}` });
  const keptSaga = sys.temporal.workflow.getHandle(purchaseWorkflowId(keptLate.id));
  await keptSaga.cancel();
  await keptSaga.result().catch(() => {});
  await writeRun('operator-cancel-while-refunding', purchaseWorkflowId(keptLate.id));

  // A support refund that starts pending and succeeds later: followed to its end.
  await sys.emulatorCall('POST', '/_emulator/settings', { refundStatus: 'pending' });
  const followed = await buy(sku, 'replay-followed');
  await sys.pay(followed.session, 'succeeded');
  await sys.waitForPurchase(followed.id, final);
  await supportRefund(followed.id);
  const pendingRefund = await sys.waitForPurchase(followed.id, (r) => r.refund_id !== null);
  await sys.emulatorCall('POST', `/_emulator/refunds/${pendingRefund.refund_id}/succeed`);
  await sys.waitForPurchase(followed.id, (r) => r.refund_status === 'succeeded');
  await sys.temporal.workflow.getHandle(refundWorkflowId(followed.id)).result();
  await writeRun('support-refund-pending-then-succeeded', refundWorkflowId(followed.id));
  await sys.emulatorCall('POST', '/_emulator/settings', { refundStatus: 'succeeded' });

  // Money on a foreign session that claims a purchase: refunded by the stray-payment saga.
  const claimed = await buy(sku, 'replay-claimed');
  const other = createStripe({ stripeSecretKey: 'sk_test_replay_other', stripeApiUrl: sys.emulator.url });
  const foreign = await other.checkout.sessions.create({
    mode: 'payment',
    line_items: [{ quantity: 1, price_data: { currency: 'usd', unit_amount: 1, product_data: { name: 'x' } } }],
    success_url: 'https://example.com/ok',
    metadata: { purchase_id: claimed.id },
  });
  await sys.pay(foreign.id, 'succeeded');
  for (let i = 0; i < 200; i++) {
    const { rows } = await sys.db.query('SELECT 1 FROM stray_payments WHERE session_id = $1', [foreign.id]);
    if (rows.length > 0) break;
    await sleep(100);
  }
  const stray = await sys.temporal.workflow.getHandle(strayPaymentWorkflowId(foreign.id)).result();
  if (stray.outcome !== 'refunded') throw new Error(`the stray payment ended ${stray.outcome}`);
  await writeRun('stray-payment-refunded', strayPaymentWorkflowId(foreign.id));

  // The session never opens: Stripe refuses it (and the same request again when the saga checks).
  await sys.emulatorCall('POST', '/_emulator/faults', {
    path: '/v1/checkout/sessions',
    method: 'POST',
    status: 400,
    count: 2,
  });
  const refusedSession = await sys.buy(sku, 'replay-session-refused');
  await record('session-refused', refusedSession.body.purchaseId, 'failed');
  await sys.emulatorCall('DELETE', '/_emulator/faults');
  // Every answer of the session step lost (served, then 500): the saga fails, then expires the
  // session Stripe opened anyway.
  await sys.emulatorCall('POST', '/_emulator/faults', SESSION_ANSWERS_LOST);
  const lost = await sys.buy(sku, 'replay-answers-lost');
  await record('session-answers-lost', lost.body.purchaseId, 'failed');
  await sys.emulatorCall('DELETE', '/_emulator/faults');

  // Stripe answers the session step 429 twice (the account's limit): retried after its jittered
  // delay, the session opens, and the buyer pays.
  await sys.emulatorCall('POST', '/_emulator/faults', {
    path: '/v1/checkout/sessions',
    method: 'POST',
    status: 429,
    count: 2,
  });
  const limited = await buy(sku, 'replay-rate-limited');
  await sys.emulatorCall('DELETE', '/_emulator/faults');
  await sys.pay(limited.session, 'succeeded');
  await record('session-rate-limited', limited.id, 'confirmed');

  // The buyer cancels while the session step is retried (Stripe answers 429 until then): the step is
  // called off, the unit goes back, and the session an attempt may have opened is looked for.
  await sys.emulatorCall('POST', '/_emulator/faults', {
    path: '/v1/checkout/sessions',
    method: 'POST',
    status: 429,
    count: 1000,
  });
  const calledOff = await sys.api(
    'POST',
    '/v1/purchases',
    { sku },
    { 'idempotency-key': randomUUID(), prefer: 'respond-async', ...(await asBuyer('replay-called-off')) },
  );
  const calledOffId = calledOff.body.purchaseId as string;
  await sys.waitForPurchase(calledOffId, (r) => r.session_expires_at !== null);
  await sys.api('POST', `/v1/purchases/${calledOffId}/cancel`, undefined, await asBuyer('replay-called-off'));
  await sys.emulatorCall('DELETE', '/_emulator/faults');
  await record('buyer-cancel-before-session', calledOffId, 'expired');

  // Two payments shipped to one address where the product allows one per address: the second is refunded.
  const shipped = await sys.createProduct({ stock: 3, maxPerAddress: 1, shippingCountries: ['FR'] });
  const address = { line1: '12 rue de la Paix', city: 'Paris', postal_code: '75002', country: 'FR' };
  for (const [i, buyer] of ['replay-address-first', 'replay-address-second'].entries()) {
    const order = await buy(shipped, buyer);
    await sys.pay(order.session, 'succeeded', { shipping: { name: `Buyer ${i}`, address } });
    if (i === 0) await sys.waitForPurchase(order.id, (r) => r.status === 'confirmed');
    else await record('address-limit-refunded', order.id, 'refunded');
  }

  // A seat another buyer holds: the gate lets the purchase through (it counts units, not seats), and
  // the saga's hold step refuses it; the run ends there.
  const seats = await sys.createProduct({ stock: 2, units: ['S1', 'S2'] });
  const seatHeld = await sys.buy(seats, 'replay-seat-first', { unitId: 'S1' });
  if (seatHeld.status !== 201) throw new Error(`the first seat: ${seatHeld.status} ${JSON.stringify(seatHeld.body)}`);
  const refused = await sys.buy(seats, 'replay-seat-second', { unitId: 'S1' });
  if (refused.status !== 409 || !refused.body.purchaseId) {
    throw new Error(`the taken seat: ${refused.status} ${JSON.stringify(refused.body)}`);
  }
  const ended = await sys.temporal.workflow.getHandle(purchaseWorkflowId(refused.body.purchaseId)).result();
  if (ended.status !== 'rejected') throw new Error(`the taken seat's saga ended ${ended.status}`);
  await writeRun('hold-refused', purchaseWorkflowId(refused.body.purchaseId));
  return recorded;
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
