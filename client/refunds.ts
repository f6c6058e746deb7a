import { WorkflowFailedError, type Client } from '@temporalio/client';
import type { Db } from '../store/db';
import { getPurchase } from '../store/purchases';
import { isRefundable, refundWorkflowId } from '../vocabulary';
import type { supportRefundWorkflow } from '../workflows/support-refund';

export type SupportRefundAnswer =
  | { outcome: 'not_found' }
  | { outcome: 'not_refundable'; detail: string }
  | {
      outcome: 'accepted';
      purchaseId: string;
      sku: string;
      refund: { status: string; reason: string };
      restocked?: boolean;
    };

/**
 * Starts (or joins) the support refund saga of one purchase, workflow id `refund-<purchaseId>`, and
 * waits briefly for its outcome. Used by the support route and the support CLI alike. Calling it
 * again never refunds twice: the workflow id and the Stripe idempotency key both prevent it.
 */
export async function requestSupportRefund(
  deps: { db: Db; temporal: Client; taskQueue: string },
  input: { purchaseId: string; reason: string; restock: boolean; actor: string },
  waitMs = 10_000,
): Promise<SupportRefundAnswer> {
  const record = await getPurchase(deps.db, input.purchaseId);
  if (!record || record.status === 'rejected') return { outcome: 'not_found' };
  if (record.status === 'refunded' && record.refund) {
    return { outcome: 'accepted', purchaseId: input.purchaseId, sku: record.sku, refund: record.refund };
  }
  if (!isRefundable(record.status)) {
    return {
      outcome: 'not_refundable',
      detail: `purchase ${input.purchaseId} is ${record.status}; only paid orders are refunded`,
    };
  }
  const workflowId = refundWorkflowId(input.purchaseId);
  try {
    await deps.temporal.workflow.start<typeof supportRefundWorkflow>('supportRefundWorkflow', {
      workflowId,
      taskQueue: deps.taskQueue,
      args: [input],
      workflowIdConflictPolicy: 'USE_EXISTING',
      // A refund saga that failed (Stripe refused) may be tried again; a finished one may not.
      workflowIdReusePolicy: 'ALLOW_DUPLICATE_FAILED_ONLY',
    });
  } catch (err) {
    // Already ran to completion: its outcome is in the record.
    const now = await getPurchase(deps.db, input.purchaseId);
    if (now?.refund) return { outcome: 'accepted', purchaseId: input.purchaseId, sku: record.sku, refund: now.refund };
    throw err;
  }
  const handle = deps.temporal.workflow.getHandle<typeof supportRefundWorkflow>(workflowId);
  let result;
  try {
    result = await Promise.race([handle.result(), new Promise<null>((r) => setTimeout(() => r(null), waitMs).unref())]);
  } catch (err) {
    if (!(err instanceof WorkflowFailedError)) throw err;
    // Stripe refused the refund (a disputed charge, say): say why; calling again retries it.
    const cause = (err.cause?.cause ?? err.cause ?? err) as Error;
    return { outcome: 'not_refundable', detail: `the refund failed: ${cause.message}` };
  }
  if (!result)
    return {
      outcome: 'accepted',
      purchaseId: input.purchaseId,
      sku: record.sku,
      refund: { status: 'pending', reason: input.reason },
    };
  if (result.outcome === 'not_refundable')
    return { outcome: 'not_refundable', detail: result.detail ?? 'not refundable' };
  return {
    outcome: 'accepted',
    purchaseId: input.purchaseId,
    sku: record.sku,
    refund: result.refund!,
    restocked: result.restocked,
  };
}
