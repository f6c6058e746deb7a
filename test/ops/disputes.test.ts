import test, { type ExecutionContext } from 'ava';
import { createStripe } from '../../config/clients';
import { refundWorkflowId } from '../../vocabulary';
import { supportActionSignal } from '../../workflows/definitions';
import { confirmedPurchase, runOpsCli } from '../helpers/attention';
import { assertInvariants, movements } from '../helpers/db';
import { until } from '../helpers/poll';
import { AS_SUPPORT, startSystem, type System } from '../helpers/system';

// The runbook's "Disputes" (docs/runbook.md), run against the real stack: the emulator opens and
// closes disputes as Stripe does and sends their events; the webhook, the support CLI and routes,
// the sagas and /metrics are the service's own.

async function ownSystem(t: ExecutionContext): Promise<System> {
  // A database of its own: the dispute gauges count every purchase of the database.
  const own = await startSystem({ ownDatabase: true });
  t.teardown(() => own.close());
  return own;
}

const supportCli = (on: System, args: string[]) =>
  runOpsCli('support', args, { TASK_QUEUE: on.taskQueue, DATABASE_URL: on.databaseUrl });

async function paymentOf(on: System, purchaseId: string): Promise<string> {
  const { rows } = await on.db.query('SELECT payment_intent_id FROM purchases WHERE purchase_id = $1', [purchaseId]);
  return rows[0].payment_intent_id as string;
}

/** The buyer's bank disputes the payment; the dispute's id. */
async function dispute(on: System, paymentIntentId: string): Promise<string> {
  const opened = await on.emulatorCall('POST', `/_emulator/payment_intents/${paymentIntentId}/dispute`, {
    reason: 'product_not_received',
  });
  if (opened.status !== 200) throw new Error(`disputing: ${opened.status} ${JSON.stringify(opened.body)}`);
  return opened.body.id as string;
}

async function refundsAtStripe(on: System, paymentIntentId: string): Promise<number> {
  const stripe = createStripe({ stripeSecretKey: 'sk_test_emulator', stripeApiUrl: on.emulator.url });
  return (await stripe.refunds.list({ payment_intent: paymentIntentId })).data.length;
}

/**
 * A confirmed purchase whose payment is disputed, and a support refund Stripe refused for it: the
 * dispute's news was late, so the refund was asked for before the record knew. It waits in
 * needs_attention, the dispute open.
 */
async function refundRefusedForDispute(t: ExecutionContext, own: System, buyer: string) {
  const { sku, purchaseId } = await confirmedPurchase(own, buyer);
  const pi = await paymentOf(own, purchaseId);
  await own.emulatorCall('POST', '/_emulator/webhooks', { pause: true });
  t.teardown(() => own.emulatorCall('POST', '/_emulator/webhooks', { pause: false }));
  const disputeId = await dispute(own, pi);
  const asked = await own.api(
    'POST',
    `/v1/support/purchases/${purchaseId}/refund`,
    { reason: 'never arrived', restock: false },
    AS_SUPPORT,
  );
  t.is(asked.status, 409, JSON.stringify(asked.body));
  t.like(asked.body, { purchaseStatus: 'needs_attention' });
  t.regex(asked.body.detail, /charged back|charge_disputed/);
  await own.emulatorCall('POST', '/_emulator/webhooks', { pause: false });
  await own.waitForPurchase(purchaseId, (p) => p.dispute_status === 'needs_response');
  t.is((await own.waitForPurchase(purchaseId, () => true)).status, 'needs_attention');
  return { sku, purchaseId, pi, disputeId };
}

/** A gauge of the API's /metrics once it reads `value` (the counts are refreshed every few seconds). */
function metricReads(on: System, series: string, value: number): Promise<number> {
  return until(
    `${series} to read ${value}`,
    async () => {
      const text = (await on.api('GET', '/metrics')).body as string;
      const line = text.split('\n').find((l) => l.startsWith(`${series} `));
      return line && Number(line.split(' ')[1]) === value ? value : undefined;
    },
    45_000,
    500,
  );
}

test('a disputed payment is listed with its deadline, counted, and not refunded while the dispute is open', async (t) => {
  const own = await ownSystem(t);
  const { sku, purchaseId } = await confirmedPurchase(own, 'dispute-open');
  const pi = await paymentOf(own, purchaseId);
  const disputeId = await dispute(own, pi);
  const recorded = await own.waitForPurchase(purchaseId, (p) => p.dispute_status === 'needs_response');
  t.is(recorded.dispute_id, disputeId);
  const dueBy = (recorded.dispute_due_by as Date).getTime();
  t.true(dueBy > Date.now() + 6 * 86_400_000, `due ${new Date(dueBy).toISOString()}`);

  // Support lists it, the most urgent first, with how long is left.
  const listed = await supportCli(own, ['disputes', '--sku', sku]);
  t.is(listed.code, 0, listed.stderr);
  // Seven days from the second Stripe stamped, less the moments since: shown to the second, that reads
  // 6d 23h, or 7d 0h when the listing comes within half a second of that stamp.
  t.regex(
    listed.stdout,
    new RegExp(`${disputeId}  needs_response  product_not_received  evidence due in (6d \\d+h|7d 0h)`),
  );
  t.regex(
    listed.stdout,
    new RegExp(`purchase ${purchaseId}  ${sku}  dispute-open  \\d+ \\w+ minor units  \\(confirmed\\)`),
  );
  // `find`, by the payment the bank names, shows it too.
  const found = await supportCli(own, ['find', '--payment-intent', pi]);
  t.regex(
    found.stdout,
    new RegExp(
      `dispute ${disputeId} needs_response \\(product_not_received, evidence due by ${new Date(dueBy).toISOString()}\\)`,
    ),
  );
  // The gauges say so, and when the answer is due.
  await metricReads(own, 'flashsale_disputes{status="needs_response"}', 1);
  await metricReads(own, 'flashsale_dispute_response_due_timestamp_seconds', dueBy / 1000);

  // Support's refund is refused, by the CLI and the route alike, and nothing reaches Stripe.
  const cli = await supportCli(own, ['refund', purchaseId, '--reason', 'never arrived']);
  t.is(cli.code, 1);
  t.regex(
    cli.stderr,
    new RegExp(
      `the payment is disputed \\(${disputeId}, product_not_received\\) and the dispute is needs_response, evidence due by`,
    ),
  );
  const route = await own.api(
    'POST',
    `/v1/support/purchases/${purchaseId}/refund`,
    { reason: 'x', restock: true },
    AS_SUPPORT,
  );
  t.is(route.status, 409);
  t.like(route.body, { type: 'not-refundable' });
  t.regex(route.body.detail, /Stripe refuses refunds while it is open/);
  t.is(await refundsAtStripe(own, pi), 0);
  t.like(await own.waitForPurchase(purchaseId, () => true), { status: 'confirmed' });
  await assertInvariants(t, own.db, sku);
});

test('a refund Stripe refused for an open dispute is settled when the dispute is lost: refunded by the chargeback, nothing refunded twice', async (t) => {
  const own = await ownSystem(t);
  const { sku, purchaseId, pi, disputeId } = await refundRefusedForDispute(t, own, 'dispute-lost');

  // The runbook: leave it. The dispute is lost (no evidence): the money went back through the bank.
  const lost = await own.emulatorCall('POST', `/_emulator/disputes/${disputeId}/close`, { outcome: 'lost' });
  t.is(lost.status, 200, JSON.stringify(lost.body));
  const settled = await own.waitForPurchase(purchaseId, (p) => p.status === 'refunded', 30_000);
  t.like(settled, { dispute_status: 'lost', refund_status: 'settled' });
  t.is(
    settled.refund_reason,
    `settled by the dispute ${disputeId}, lost: the money went back to the buyer through the chargeback`,
  );
  await own.temporal.workflow.getHandle(refundWorkflowId(purchaseId)).result();
  const { rows } = await own.db.query(
    `SELECT actor, detail FROM audit_log WHERE purchase_id = $1 AND action = 'refund_settled_by_dispute'`,
    [purchaseId],
  );
  t.is(rows.length, 1);
  t.like(rows[0], { actor: 'stripe', detail: { disputeId, told: [refundWorkflowId(purchaseId)] } });
  // No refund at Stripe, the unit not put back on sale, nothing waits for support any more.
  t.is(await refundsAtStripe(own, pi), 0);
  t.is(await movements(own.db, purchaseId, 'refund_restock'), 0);
  await metricReads(own, 'flashsale_purchases{status="needs_attention"}', 0);
  await metricReads(own, 'flashsale_disputes{status="lost"}', 1);
  // Lost, it is refused again rather than refunded twice; listed with --all only.
  const again = await supportCli(own, ['refund', purchaseId, '--reason', 'again']);
  t.is(again.code, 0, 'already refunded: answered from the record');
  t.regex(again.stdout, /refund settled/);
  t.regex((await supportCli(own, ['disputes', '--sku', sku])).stdout, new RegExp(`^no open disputes of ${sku}`));
  t.regex((await supportCli(own, ['disputes', '--all', '--sku', sku])).stdout, new RegExp(`${disputeId}  lost`));
  await assertInvariants(t, own.db, sku);
});

test('a refund Stripe refused for an open dispute is made when the dispute is won, at once and once', async (t) => {
  const own = await ownSystem(t);
  const { sku, purchaseId, pi, disputeId } = await refundRefusedForDispute(t, own, 'dispute-won');

  // The merchant's evidence wins: the money is back with the merchant, and the buyer is still owed it.
  // The saga's next try after the refusal is seconds to an hour away; the won dispute's news tries now.
  const won = await own.emulatorCall('POST', `/_emulator/disputes/${disputeId}/close`, { outcome: 'won' });
  t.is(won.status, 200, JSON.stringify(won.body));
  const refunded = await own.waitForPurchase(purchaseId, (p) => p.status === 'refunded', 30_000);
  t.like(refunded, { dispute_status: 'won', refund_status: 'succeeded' });
  await own.temporal.workflow.getHandle(refundWorkflowId(purchaseId)).result();
  const { rows } = await own.db.query(
    `SELECT actor, detail FROM audit_log WHERE purchase_id = $1 AND action = 'refund_retried_after_dispute'`,
    [purchaseId],
  );
  t.is(rows.length, 1);
  t.like(rows[0], { actor: 'stripe', detail: { disputeId, told: [refundWorkflowId(purchaseId)] } });
  t.is(await refundsAtStripe(own, pi), 1, 'one refund at Stripe');
  await metricReads(own, 'flashsale_purchases{status="needs_attention"}', 0);
  await assertInvariants(t, own.db, sku);
});

test('a lost dispute whose word to the refund saga fails at first is acted on when Stripe sends the event again', async (t) => {
  const own = await ownSystem(t);
  const { sku, purchaseId, disputeId } = await refundRefusedForDispute(t, own, 'dispute-lost-retried');
  // The API's word to the saga fails once (Temporal unreachable for a moment): the webhook answers
  // 5xx, and the emulator sends the event again, as Stripe does.
  const workflow = own.temporal.workflow;
  const getHandle = workflow.getHandle.bind(workflow);
  let failures = 1;
  workflow.getHandle = ((...args: Parameters<typeof getHandle>) => {
    const handle = getHandle(...args);
    const signal = handle.signal.bind(handle);
    handle.signal = (async (def: { name: string }, ...rest: unknown[]) => {
      if (def.name === supportActionSignal.name && failures > 0) {
        failures--;
        throw new Error('Temporal is unreachable (the test)');
      }
      return (signal as (d: unknown, ...r: unknown[]) => Promise<void>)(def, ...rest);
    }) as typeof handle.signal;
    return handle;
  }) as typeof workflow.getHandle;
  t.teardown(() => {
    workflow.getHandle = getHandle;
  });

  const lost = await own.emulatorCall('POST', `/_emulator/disputes/${disputeId}/close`, { outcome: 'lost' });
  t.is(lost.status, 200, JSON.stringify(lost.body));
  const settled = await own.waitForPurchase(purchaseId, (p) => p.status === 'refunded', 30_000);
  t.like(settled, { dispute_status: 'lost', refund_status: 'settled' });
  t.is(failures, 0, 'the first word failed');
  const { rows } = await own.db.query(
    `SELECT action, detail->>'status' AS status FROM audit_log
      WHERE purchase_id = $1 AND action IN ('dispute', 'refund_settled_by_dispute') ORDER BY id`,
    [purchaseId],
  );
  // The failed delivery left nothing behind: one 'dispute' row for the closing, then one settlement.
  t.deepEqual(
    rows.filter((r) => r.status === 'lost' || r.action === 'refund_settled_by_dispute').map((r) => r.action),
    ['dispute', 'refund_settled_by_dispute'],
  );
  await assertInvariants(t, own.db, sku);
});

test('a refund of a disputed payment is refused while the dispute is open, and goes through once it is won', async (t) => {
  const sys = await ownSystem(t);
  const { purchaseId } = await confirmedPurchase(sys, 'cli-attn-dispute');
  const paymentIntent = await paymentOf(sys, purchaseId);
  const disputeId = await dispute(sys, paymentIntent);
  await sys.waitForPurchase(purchaseId, (r) => r.dispute_status === 'needs_response');
  // Refused before Stripe is asked (it would refuse too, and the saga would retry a refund it never makes).
  const refused = await supportCli(sys, ['refund', purchaseId, '--reason', 'goodwill']);
  t.is(refused.code, 1);
  t.regex(refused.stderr, /the payment is disputed \(dp_\w+, product_not_received\) and the dispute is needs_response/);
  t.is((await sys.waitForPurchase(purchaseId, () => true)).status, 'confirmed');
  t.is(await refundsAtStripe(sys, paymentIntent), 0);

  const won = await sys.emulatorCall('POST', `/_emulator/disputes/${disputeId}/close`, { outcome: 'won' });
  t.is(won.status, 200, JSON.stringify(won.body));
  await sys.waitForPurchase(purchaseId, (r) => r.dispute_status === 'won');
  const out = await supportCli(sys, ['refund', purchaseId, '--reason', 'goodwill']);
  t.is(out.code, 0, out.stderr);
  await sys.waitForPurchase(purchaseId, (r) => r.status === 'refunded' && r.refund_status === 'succeeded');
  t.is(await refundsAtStripe(sys, paymentIntent), 1);
});
