import type { Db } from '../store/db';
import { listDisputes, type DisputedPurchase } from '../store/disputes';
import { isDisputeOpen } from '../vocabulary';
import { formatDuration } from './temporal-describe';

// `npm run support -- disputes [--all] [--sku SKU]`: the disputed payments (chargebacks), the open
// ones first by how soon Stripe wants the evidence. Reads Postgres only (the webhook keeps each
// purchase's dispute on its record), so it works while Temporal is down. Exit 0, also when none.

/** How long is left to answer, as an operator reads it: `in 6d 23h`, `2h 5m past due`, or `-`. */
export function responseDue(dueBy: string | undefined, now: number): string {
  if (!dueBy) return '-';
  const left = Date.parse(dueBy) - now;
  return left >= 0 ? `in ${formatDuration(left)}` : `${formatDuration(-left)} past due`;
}

function line(d: DisputedPurchase, now: number): string {
  const amount = d.amountCents !== undefined ? `${d.amountCents} ${d.currency ?? ''} minor units` : 'amount unknown';
  const due = isDisputeOpen(d.dispute.status)
    ? `  evidence due ${responseDue(d.dispute.dueBy, now)} (${d.dispute.dueBy})`
    : '';
  const refund = d.refundStatus ? `, refund ${d.refundStatus}` : '';
  return (
    `  ${d.dispute.disputeId}  ${d.dispute.status}  ${d.dispute.reason || 'no reason'}${due}\n` +
    `    purchase ${d.purchaseId}  ${d.sku}  ${d.buyerId}  ${amount}  (${d.purchaseStatus}${refund})`
  );
}

export async function printDisputes(db: Db, opts: { all: boolean; sku?: string }, now = Date.now()): Promise<number> {
  const found = await listDisputes(db, { open: !opts.all, sku: opts.sku });
  const scope = `${opts.all ? '' : 'open '}disputes${opts.sku ? ` of ${opts.sku}` : ''}`;
  if (found.length === 0) {
    console.log(`no ${scope}`);
    return 0;
  }
  console.log(`${scope}: ${found.length}`);
  for (const d of found) console.log(line(d, now));
  console.log(
    '\nAnswer each in the Stripe Dashboard (Payments → Disputes) before its deadline: docs/runbook.md, "Disputes".',
  );
  return 0;
}
