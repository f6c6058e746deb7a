import type { Db } from '../store/db';
import { findPurchases, MAX_LOOKUP, type PurchaseLookup, type PurchaseRecord } from '../store/purchases';
import { isDisputeOpen, purchaseWorkflowId } from '../vocabulary';
import type { TemporalUi } from './temporal-ui';

// `support find`: what support needs when a buyer writes in with only their account, a Checkout
// Session id, or the PaymentIntent on their bank statement. The same lookup as
// `GET /v1/support/purchases`, with the ids the API keeps to itself (session, PaymentIntent, refund)
// and the saga's page in the Temporal UI.

function describe(by: PurchaseLookup): string {
  if ('buyerId' in by) return `buyer ${by.buyerId}`;
  if ('sessionId' in by) return `Checkout Session ${by.sessionId}`;
  return `PaymentIntent ${by.paymentIntentId}`;
}

function lines(p: PurchaseRecord, ui: TemporalUi): string[] {
  const amount = p.amountCents !== undefined ? `${p.amountCents} ${p.currency} minor units` : 'no amount yet';
  const out = [
    `${p.purchaseId}  ${p.status}  ${p.sku} x${p.quantity}  buyer ${p.buyerId}  ${amount}`,
    `  created ${p.createdAt}, last change ${p.updatedAt}${p.holdExpiresAt ? `, hold until ${p.holdExpiresAt}` : ''}`,
  ];
  if (p.sessionId || p.paymentIntentId) {
    out.push(`  session ${p.sessionId ?? '-'}  payment ${p.paymentIntentId ?? '-'}`);
  }
  if (p.reason) out.push(`  reason: ${p.reason}`);
  if (p.refund) {
    const failed = p.refund.failureReason ? `, failed: ${p.refund.failureReason}` : '';
    out.push(`  refund ${p.refund.refundId ?? '-'} ${p.refund.status} (${p.refund.reason}${failed})`);
  }
  if (p.dispute) {
    const d = p.dispute;
    const due = d.dueBy && isDisputeOpen(d.status) ? `, evidence due by ${d.dueBy}` : '';
    out.push(`  dispute ${d.disputeId} ${d.status} (${d.reason}${due}): npm run support -- disputes`);
  }
  out.push(`  ${ui.workflow(purchaseWorkflowId(p.purchaseId))}`);
  return out;
}

/** Prints the purchases `by` names; exit 0 when there is one at least, 1 when none. */
export async function findAndPrint(db: Db, by: PurchaseLookup, ui: TemporalUi, json: boolean): Promise<number> {
  const found = await findPurchases(db, by);
  if (json) {
    const withUrl = found.map((p) => ({ ...p, url: ui.workflow(purchaseWorkflowId(p.purchaseId)) }));
    console.log(JSON.stringify({ by, purchases: withUrl }, null, 2));
  } else if (found.length === 0) {
    console.error(`support: no purchase of ${describe(by)}`);
  } else {
    const more = found.length === MAX_LOOKUP ? ` (the newest ${MAX_LOOKUP}; there may be more)` : '';
    console.log(`${found.length} purchase(s) of ${describe(by)}${more}:\n`);
    console.log(found.map((p) => lines(p, ui).join('\n')).join('\n\n'));
  }
  return found.length > 0 ? 0 : 1;
}
