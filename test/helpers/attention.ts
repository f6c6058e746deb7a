import { execFile } from 'node:child_process';
import path from 'node:path';
import type Stripe from 'stripe';
import { createStripe } from '../../config/clients';
import { nodeScript } from '../../dev/proc';
import { AS_SUPPORT, sellTo, sessionOf, type System } from './system';

// Money that waits for support, made for real: Stripe (the emulator) refuses every refund, and a
// payment arrives that must be refunded. The sagas then flag `needs_attention` and keep retrying.

const repoRoot = path.resolve(__dirname, '../..');

/** Stripe's answer to every refund until `allowRefunds`: the message the sagas must show. */
export const REFUSAL = 'Injected fault: HTTP 400.';

/** From now on the emulator refuses refunds with 400 (long enough for the sagas' own retries). */
export async function refuseRefunds(sys: System): Promise<void> {
  const res = await sys.emulatorCall('POST', '/_emulator/faults', {
    path: '/v1/refunds',
    method: 'POST',
    status: 400,
    count: 100,
  });
  if (res.status !== 201) throw new Error(`arming the refund fault: ${res.status} ${JSON.stringify(res.body)}`);
}

export async function allowRefunds(sys: System): Promise<void> {
  await sys.emulatorCall('DELETE', '/_emulator/faults');
}

/**
 * A purchase whose buyer pays after the hold lapsed, the only unit having gone to someone else
 * meanwhile: the saga must refund it. `beforePay` runs just before the late payment.
 */
async function latePaymentStockGone(sys: System, buyer: string, beforePay: () => Promise<void>) {
  // 5 s: the session must open within the hold (a 2 s hold lapsed before it on a loaded machine).
  const sku = await sys.createProduct({ stock: 1, holdSeconds: 5 });
  const late = await sys.buy(sku, buyer);
  if (late.status !== 201) throw new Error(`buying: ${late.status} ${JSON.stringify(late.body)}`);
  const purchaseId = late.body.purchaseId as string;
  await sys.waitForPurchase(purchaseId, (r) => r.status === 'expired', 20_000);
  // Sold to a rival (forced: its hold may lapse before its payment lands on a busy machine).
  await sellTo(sys, sku, `${buyer}-rival`);
  await beforePay();
  await sys.pay(await sessionOf(sys.db, purchaseId), 'succeeded', { force: true });
  return { sku, purchaseId };
}

/** A purchase in `needs_attention`: a late payment with stock gone, and Stripe refuses the refund (until `allowRefunds`). */
export async function refusedLateRefund(sys: System, buyer: string): Promise<{ sku: string; purchaseId: string }> {
  const made = await latePaymentStockGone(sys, buyer, () => refuseRefunds(sys));
  await sys.waitForPurchase(made.purchaseId, (r) => r.status === 'needs_attention', 30_000);
  return made;
}

/**
 * A purchase in `needs_attention` with no saga left: its late payment was refunded and its saga
 * ended, then the refund failed (`refund.failed`, as a closed card does days later).
 */
export async function refundFailedAfterSagaEnded(
  sys: System,
  buyer: string,
): Promise<{ sku: string; purchaseId: string }> {
  const made = await latePaymentStockGone(sys, buyer, async () => {});
  const refunded = await sys.waitForPurchase(
    made.purchaseId,
    (r) => r.status === 'refunded' && r.refund_status === 'succeeded',
  );
  await sys.temporal.workflow.getHandle(`purchase-${made.purchaseId}`).result();
  const failed = await sys.emulatorCall('POST', `/_emulator/refunds/${refunded.refund_id}/fail`, {});
  if (failed.status !== 200) throw new Error(`failing the refund: ${failed.status} ${JSON.stringify(failed.body)}`);
  await sys.waitForPurchase(made.purchaseId, (r) => r.status === 'needs_attention');
  return made;
}

/** A confirmed purchase of a new product, paid in time. */
export async function confirmedPurchase(
  sys: System,
  buyer: string,
  onSku?: string,
): Promise<{ sku: string; purchaseId: string }> {
  const sku = onSku ?? (await sys.createProduct());
  const res = await sys.buy(sku, buyer);
  if (res.status !== 201) throw new Error(`buying: ${res.status} ${JSON.stringify(res.body)}`);
  await sys.pay(await sessionOf(sys.db, res.body.purchaseId), 'succeeded');
  await sys.waitForPurchase(res.body.purchaseId, (p) => p.status === 'confirmed');
  return { sku, purchaseId: res.body.purchaseId as string };
}

/**
 * A purchase in `needs_attention` with no saga left: support refunded the confirmed order (with
 * `restock`), its refund saga ended, then the refund failed (`refund.failed`, a closed card).
 */
export async function supportRefundFailedAfterSagaEnded(
  sys: System,
  buyer: string,
  restock = false,
): Promise<{ sku: string; purchaseId: string; refundId: string }> {
  const made = await confirmedPurchase(sys, buyer);
  const asked = await sys.api(
    'POST',
    `/v1/support/purchases/${made.purchaseId}/refund`,
    { reason: 'wrong size shipped', restock },
    AS_SUPPORT,
  );
  if (asked.status !== 202) throw new Error(`refunding: ${asked.status} ${JSON.stringify(asked.body)}`);
  await sys.temporal.workflow.getHandle(`refund-${made.purchaseId}`).result();
  const refunded = await sys.waitForPurchase(made.purchaseId, (r) => r.refund_status === 'succeeded');
  const failed = await sys.emulatorCall('POST', `/_emulator/refunds/${refunded.refund_id}/fail`, {});
  if (failed.status !== 200) throw new Error(`failing the refund: ${failed.status} ${JSON.stringify(failed.body)}`);
  await sys.waitForPurchase(made.purchaseId, (r) => r.status === 'needs_attention');
  return { ...made, refundId: refunded.refund_id as string };
}

/**
 * A Checkout Session (1 cent by default) that another app on the same Stripe account created, claiming
 * `purchaseId` in its metadata and client_reference_id: not the purchase's own. With `referenceOnly`,
 * only client_reference_id names it, as a payer can set on a Payment Link.
 */
export function foreignSession(
  sys: System,
  purchaseId: string,
  o: { amountCents?: number; referenceOnly?: boolean } = {},
): Promise<Stripe.Checkout.Session> {
  const otherApp = createStripe({ stripeSecretKey: 'sk_test_another_app', stripeApiUrl: sys.emulator.url });
  const claim = o.referenceOnly ? {} : { metadata: { purchase_id: purchaseId } };
  return otherApp.checkout.sessions.create({
    mode: 'payment',
    line_items: [
      { quantity: 1, price_data: { currency: 'usd', unit_amount: o.amountCents ?? 1, product_data: { name: 'Gift' } } },
    ],
    success_url: 'https://other-app.test/thanks',
    client_reference_id: purchaseId,
    ...claim,
    ...(o.referenceOnly ? {} : { payment_intent_data: claim }),
  });
}

/**
 * A stray payment in `needs_attention`: another app on the account opens a Checkout Session naming
 * a purchase that is waiting for its payment, a buyer pays it, and Stripe refuses the refund.
 * Returns the stray session and the purchase it named (still awaiting its own payment).
 */
export async function refusedStrayRefund(
  sys: System,
  buyer: string,
): Promise<{ sku: string; purchaseId: string; sessionId: string }> {
  const sku = await sys.createProduct();
  const res = await sys.buy(sku, buyer);
  if (res.status !== 201) throw new Error(`buying: ${res.status} ${JSON.stringify(res.body)}`);
  const purchaseId = res.body.purchaseId as string;
  const foreign = await foreignSession(sys, purchaseId);
  await refuseRefunds(sys);
  const paid = await sys.pay(foreign.id, 'succeeded');
  if (paid.status !== 200) throw new Error(`paying the foreign session: ${paid.status} ${JSON.stringify(paid.body)}`);
  const deadline = Date.now() + 30_000;
  for (;;) {
    const { rows } = await sys.db.query('SELECT status FROM stray_payments WHERE session_id = $1', [foreign.id]);
    if (rows[0]?.status === 'needs_attention') break;
    if (Date.now() > deadline)
      throw new Error(`stray payment ${foreign.id} never needed attention: ${rows[0]?.status}`);
    await new Promise((r) => setTimeout(r, 100));
  }
  return { sku, purchaseId, sessionId: foreign.id };
}

/** One of the operator CLIs (`ops/<name>.ts`) as an operator runs it, in a child process. */
export function runOpsCli(
  name: 'sagas' | 'support' | 'reconcile' | 'worker-health',
  args: string[],
  env: Record<string, string | undefined> = {},
): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [...nodeScript(`ops/${name}.ts`), ...args],
      { cwd: repoRoot, env: { ...process.env, TEMPORAL_NAMESPACE: 'default', ...env }, timeout: 60_000 },
      (err, stdout, stderr) => {
        const code = err ? (typeof err.code === 'number' ? err.code : 1) : 0;
        resolve({ code, stdout, stderr });
      },
    );
  });
}
