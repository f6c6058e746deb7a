import test, { type ExecutionContext } from 'ava';
import { purchaseWorkflowId } from '../../vocabulary';
import { runOpsCli } from '../helpers/attention';
import { assertInvariants, movements } from '../helpers/db';
import { until } from '../helpers/poll';
import { sessionOf, startSystem, type System } from '../helpers/system';

// The runbook's "A Stripe step that keeps failing" (docs/runbook.md), run against the real stack:
// the emulator answers 500 to every expire of a Checkout Session, so the saga closing a lapsed hold
// (or compensating an operator's cancel) retries it for ever. Each test follows the runbook: find it
// with `npm run sagas -- stuck`, then end it the way the runbook says, and checks the stock after.

/**
 * The webhook's grace after a lapse (EXPIRE_ANSWER_GRACE_MS, 30 s by default): an expiry heard
 * within it is taken for the saga's own expire. Short here, so Stripe's expiry past it comes soon.
 */
const GRACE_MS = 2_000;

async function ownSystem(t: ExecutionContext): Promise<System> {
  const own = await startSystem({ ownDatabase: true, expireAnswerGraceMs: GRACE_MS });
  t.teardown(() => own.close());
  return own;
}

const cli = (on: System, name: 'sagas' | 'support', args: string[]) =>
  runOpsCli(name, args, { TASK_QUEUE: on.taskQueue, DATABASE_URL: on.databaseUrl });

/** A purchase whose hold lapsed and whose session Stripe answers 500 to expiring, found by the runbook's first step. */
async function stuckOnExpire(t: ExecutionContext, own: System, buyer: string) {
  const fault = await own.emulatorCall('POST', '/_emulator/faults', {
    path: '/v1/checkout/sessions/*/expire',
    method: 'POST',
    status: 500,
    count: 10_000,
  });
  t.is(fault.status, 201, JSON.stringify(fault.body));
  const sku = await own.createProduct({ stock: 1, holdSeconds: 3 });
  const bought = await own.buy(sku, buyer);
  t.is(bought.status, 201, JSON.stringify(bought.body));
  const purchaseId = bought.body.purchaseId as string;
  const lapsedAt = Date.parse(bought.body.holdExpiresAt as string);
  // Step 1: `sagas stuck` names the step and Stripe's answer.
  const found = await until(
    'sagas stuck to report the failing expire',
    async () => {
      const out = await cli(own, 'sagas', ['stuck', '--older-than', '0s', '--sku', sku]);
      return /activity expireCheckout failing: attempt \d+, last failure: .*500/.test(out.stdout) ? out : undefined;
    },
    60_000,
    500,
  );
  t.true(found.stdout.includes(purchaseWorkflowId(purchaseId)), found.stdout);
  // ... and points at the runbook's entry.
  t.true(found.stdout.includes('(docs/runbook.md, "A Stripe step that keeps failing")'), found.stdout);
  t.is((await own.waitForPurchase(purchaseId, () => true)).status, 'awaiting_payment');
  return { sku, purchaseId, lapsedAt, session: await sessionOf(own.db, purchaseId) };
}

/** Stripe expires the session itself (its own `expires_at`, or by hand with the Stripe CLI), past the webhook's grace. */
async function stripeExpiresTheSession(own: System, session: string, lapsedAt: number): Promise<void> {
  await until(
    'the grace after the lapse',
    async () => (Date.now() > lapsedAt + GRACE_MS ? true : undefined),
    120_000,
    250,
  );
  const lapsed = await own.emulatorCall('POST', `/_emulator/sessions/${session}/lapse`, {});
  if (lapsed.status !== 200) throw new Error(`lapsing ${session}: ${lapsed.status} ${JSON.stringify(lapsed.body)}`);
}

test('a close stuck on a failing expire ends, the unit back on sale, once Stripe says the session expired', async (t) => {
  const own = await ownSystem(t);
  const { sku, purchaseId, lapsedAt, session } = await stuckOnExpire(t, own, 'expire-500-lapse');
  await stripeExpiresTheSession(own, session, lapsedAt);
  const ended = await own.waitForPurchase(purchaseId, (p) => p.status !== 'awaiting_payment', 60_000);
  t.like(ended, { status: 'expired', reason: 'the hold lapsed before payment' });
  t.is(await movements(own.db, purchaseId, 'expire'), 1);
  await assertInvariants(t, own.db, sku);
});

test('an operator’s cancel of a saga stuck on a failing expire ends once Stripe says the session expired', async (t) => {
  const own = await ownSystem(t);
  const { sku, purchaseId, lapsedAt, session } = await stuckOnExpire(t, own, 'expire-500-cancel');
  const handle = own.temporal.workflow.getHandle(purchaseWorkflowId(purchaseId));
  await handle.cancel();
  await stripeExpiresTheSession(own, session, lapsedAt);
  await t.throwsAsync(handle.result());
  t.like(await own.waitForPurchase(purchaseId, () => true), { status: 'failed', reason: 'cancelled by an operator' });
  await assertInvariants(t, own.db, sku);
});

test('support settles by hand a failing expire Stripe never answers: the saga stops calling and gives the unit back', async (t) => {
  const own = await ownSystem(t);
  const { sku, purchaseId } = await stuckOnExpire(t, own, 'expire-500-settle');
  const settled = await cli(own, 'support', ['settle', purchaseId, '--note', 'expired with the Stripe CLI']);
  t.is(settled.code, 0, settled.stderr);
  t.regex(
    settled.stdout,
    /settling by hand the step that keeps failing: purchase-\S+: activity expireCheckout failing/,
  );
  t.regex(settled.stdout, new RegExp(`purchase ${purchaseId}: expired`));
  t.like(await own.waitForPurchase(purchaseId, () => true), { status: 'expired' });
  const { rows } = await own.db.query(
    `SELECT actor, detail FROM audit_log WHERE purchase_id = $1 AND action = 'settled_by_hand'`,
    [purchaseId],
  );
  t.is(rows.length, 1);
  t.like(rows[0].detail, { note: 'expired with the Stripe CLI' });
  await own.temporal.workflow.getHandle(purchaseWorkflowId(purchaseId)).result();
  await assertInvariants(t, own.db, sku);
  // Nothing else waits: settling again is refused, naming why.
  const again = await cli(own, 'support', ['settle', purchaseId, '--note', 'again']);
  t.is(again.code, 1);
  t.regex(again.stderr, /is expired, not needs_attention, and no Stripe step of its sagas keeps failing/);
});
