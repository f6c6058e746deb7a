import { WorkflowExecutionAlreadyStartedError, WorkflowNotFoundError, type Client } from '@temporalio/client';
import type { SignalDefinition } from '@temporalio/common';
import type { Db } from '../store/db';
import { findHold } from '../store/holds';
import { appendAudit, getPurchase, type PurchaseRecord } from '../store/purchases';
import { searchAttributes } from './purchases';
import {
  isDisputeOpen,
  isRefundable,
  purchaseWorkflowId,
  refundWorkflowId,
  strayPaymentWorkflowId,
  supportRequestDetail,
  type RefundEvent,
  type RefundSummary,
  type StrayPaymentInput,
  type SupportAction,
  type SupportRefundInput,
} from '../vocabulary';
import { refundEventSignal, supportActionSignal } from '../workflows/definitions';
import type { refundAgainWorkflow } from '../workflows/refund-again';
import type { strayPaymentWorkflow } from '../workflows/stray-payment';
import type { supportRefundWorkflow } from '../workflows/support-refund';

export type SupportRefundAnswer =
  | { outcome: 'not_found' }
  | { outcome: 'not_refundable'; detail: string }
  /** Stripe refused the refund or it failed: the purchase is `needs_attention`, its saga tries again. */
  | { outcome: 'needs_attention'; purchaseId: string; refund: { status: 'failed'; reason: string }; detail: string }
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
 * again never refunds twice: the workflow id and the Stripe idempotency key both prevent it. A
 * refund Stripe refused or that failed is answered `needs_attention` with Stripe's words (its saga
 * keeps trying); calling again asks the waiting saga to try once more. An API instance that is
 * shutting down (`lifecycle.closing`) stops waiting and answers what it has.
 */
export async function requestSupportRefund(
  deps: { db: Db; temporal: Client; taskQueue: string; lifecycle?: { closing: AbortSignal } },
  input: SupportRefundInput,
  waitMs = 10_000,
): Promise<SupportRefundAnswer> {
  const record = await getPurchase(deps.db, input.purchaseId);
  if (!record || record.status === 'rejected') return { outcome: 'not_found' };
  const accepted = (refund: RefundSummary, restocked?: boolean): SupportRefundAnswer => ({
    outcome: 'accepted',
    purchaseId: input.purchaseId,
    sku: record.sku,
    refund: { status: refund.status, reason: refund.reason },
    ...(restocked !== undefined ? { restocked } : {}),
  });
  const failing = (now: PurchaseRecord): SupportRefundAnswer => ({
    outcome: 'needs_attention',
    purchaseId: input.purchaseId,
    refund: { status: 'failed', reason: now.refund?.reason ?? input.reason },
    detail:
      `the refund failed and is being retried (Stripe: ${now.refund?.failureReason ?? now.reason}). ` +
      'The purchase needs attention: its saga tries again with backoff; call again to try now, or, once the ' +
      `money went back another way, npm run support -- settle ${input.purchaseId} --note "what was done"`,
  });
  if (record.status === 'refunded' && record.refund) return alreadyRefunded(deps.db, record, input.restock);
  const disputed = disputeRefusal(record);
  if (disputed) return { outcome: 'not_refundable', detail: disputed };
  const workflowId = refundWorkflowId(input.purchaseId);
  const handle = deps.temporal.workflow.getHandle<typeof supportRefundWorkflow>(workflowId);
  if (record.status === 'needs_attention' && record.refund?.status === 'failed') {
    // A refund of ours that Stripe refused or that failed: its saga waits for a word to try again.
    await tellOrRefundAgain(deps, record, { action: 'retry', actor: input.actor });
  } else if (!isRefundable(record.status)) {
    return {
      outcome: 'not_refundable',
      detail: `purchase ${input.purchaseId} is ${record.status}; only paid orders are refunded`,
    };
  } else {
    try {
      await deps.temporal.workflow.start<typeof supportRefundWorkflow>('supportRefundWorkflow', {
        workflowId,
        taskQueue: deps.taskQueue,
        args: [input],
        // The server alone decides atomically whether this request starts the saga: one that finds
        // it running joins it, and is recorded here (the saga records only the request it started with).
        workflowIdConflictPolicy: 'FAIL',
        workflowIdReusePolicy: 'ALLOW_DUPLICATE_FAILED_ONLY',
        typedSearchAttributes: searchAttributes(record, record.status),
      });
    } catch (err) {
      if (!(err instanceof WorkflowExecutionAlreadyStartedError)) throw err;
      if ((await handle.describe()).status.name === 'RUNNING') {
        await appendAudit(deps.db, input.purchaseId, input.actor, 'refund_request_joined', supportRequestDetail(input));
      } else {
        // Already ran to completion: its refund is in the record; an outcome without one (it found
        // nothing to refund) is its result, read below.
        const now = await getPurchase(deps.db, input.purchaseId);
        if (now?.refund) return accepted(now.refund);
      }
    }
  }
  // The outcome, or the first word of it on the record: Stripe took the refund, or refused it.
  // result() long-polls: its deadline is this wait, not the connection's short one.
  const result = deps.temporal
    .withDeadline(Date.now() + waitMs, () => handle.result())
    .then(
      (r) => r,
      () => null,
    );
  const deadline = Date.now() + waitMs;
  while (Date.now() < deadline && !deps.lifecycle?.closing.aborted) {
    const done = await Promise.race([
      result,
      new Promise<undefined>((r) => setTimeout(() => r(undefined), 100).unref()),
    ]);
    if (done) {
      if (done.outcome === 'not_refundable')
        return { outcome: 'not_refundable', detail: done.detail ?? 'not refundable' };
      return accepted(done.refund!, done.restocked);
    }
    const now = await getPurchase(deps.db, input.purchaseId);
    if (now?.updatedAt === record.updatedAt || !now?.refund) continue;
    if (now.status === 'needs_attention') return failing(now);
    if (now.status === 'refunded' && now.refund.status === 'pending') return accepted(now.refund);
  }
  return accepted({ status: 'pending', reason: input.reason });
}

/**
 * Why a refund is not made while the payment is disputed, or null: Stripe refuses to refund a charge
 * whose dispute is open (`charge_disputed`), and once the dispute is lost the bank has already given
 * the money back. A won dispute leaves the charge refundable.
 */
function disputeRefusal(record: PurchaseRecord): string | null {
  const d = record.dispute;
  if (!d) return null;
  const which = `the payment is disputed (${d.disputeId}, ${d.reason || 'no reason given'})`;
  if (isDisputeOpen(d.status)) {
    const due = d.dueBy ? `, evidence due by ${d.dueBy}` : '';
    return (
      `${which} and the dispute is ${d.status}${due}: Stripe refuses refunds while it is open. ` +
      'Answer the dispute in the Stripe Dashboard (or accept it); a lost dispute gives the money back to the ' +
      'buyer through the bank, a won one makes the payment refundable again (docs/runbook.md, "Disputes")'
    );
  }
  if (d.status === 'lost') return `${which} and the dispute was lost: the money already went back to the buyer`;
  return null;
}

/**
 * The answer to a refund asked again of a refunded purchase: its refund; asked to restock, whether its
 * unit went back on sale. A restock goes with the refund only (once the money is back): one asked of a
 * purchase whose refund ended without it is refused, saying so, and changes nothing.
 */
async function alreadyRefunded(db: Db, record: PurchaseRecord, restock: boolean): Promise<SupportRefundAnswer> {
  const refund = { status: record.refund!.status, reason: record.refund!.reason };
  const accepted = (restocked?: boolean): SupportRefundAnswer => ({
    outcome: 'accepted',
    purchaseId: record.purchaseId,
    sku: record.sku,
    refund,
    ...(restocked !== undefined ? { restocked } : {}),
  });
  // Still in progress: its saga restocks when it succeeds, if that was asked.
  if (!restock || refund.status === 'pending') return accepted();
  const hold = await findHold(db, record.purchaseId);
  if (hold?.status === 'restocked') return accepted(true);
  const why =
    hold?.status === 'sold'
      ? 'without restock: its unit was not put back on sale; nothing was changed (a restock goes with the refund only)'
      : `with no sold unit to put back on sale (its hold is ${hold?.status ?? 'gone'}); nothing was changed`;
  return {
    outcome: 'not_refundable',
    detail: `purchase ${record.purchaseId} was already refunded (refund ${refund.status}) ${why}`,
  };
}

/** The workflow that made a refund on this path, and waits for its news. */
function refundOwner(step: 'late' | 'support' | 'stray', purchaseId: string, sessionId?: string): string {
  if (step === 'late') return purchaseWorkflowId(purchaseId);
  if (step === 'support') return refundWorkflowId(purchaseId);
  return strayPaymentWorkflowId(sessionId ?? '');
}

/** Hands a refund's news to the saga that waits for it; false when that saga is no longer running. */
export async function deliverRefundNews(
  temporal: Client,
  owner: { step: 'late' | 'support' | 'stray'; purchaseId: string; sessionId?: string },
  news: RefundEvent,
): Promise<boolean> {
  return signalIfRunning(temporal, refundOwner(owner.step, owner.purchaseId, owner.sessionId), refundEventSignal, news);
}

/** Signals a workflow if it is still running; false when it is not (closed, or never started). */
async function signalIfRunning<A>(
  temporal: Client,
  workflowId: string,
  signal: SignalDefinition<[A]>,
  arg: A,
): Promise<boolean> {
  try {
    await temporal.workflow.getHandle(workflowId).signal(signal, arg);
    return true;
  } catch (err) {
    // Temporal answers a signal to a closed workflow as not found, like one to an id never used.
    if (err instanceof WorkflowNotFoundError) return false;
    throw err;
  }
}

/**
 * Support's word to the sagas of a purchase that wait on a step Stripe refused (try again, or it was
 * settled by hand): sent to each of its running sagas (the purchase saga, its support refund).
 * Returns the workflow ids that got it.
 */
export async function tellSupportAction(
  temporal: Client,
  purchaseId: string,
  action: SupportAction,
): Promise<string[]> {
  const told: string[] = [];
  for (const workflowId of [purchaseWorkflowId(purchaseId), refundWorkflowId(purchaseId)]) {
    if (await signalIfRunning(temporal, workflowId, supportActionSignal, action)) told.push(workflowId);
  }
  return told;
}

/**
 * Support's word for a purchase in `needs_attention`: to each of its running sagas, or, when none runs
 * and the record shows a refund that failed after its saga ended, to a new run that makes the refund
 * again (`refundAgainWorkflow`, signal-with-start on `refund-<purchaseId>`: two words at once start
 * one run). Returns the workflow ids told; empty when nothing can hear it.
 */
export async function tellOrRefundAgain(
  deps: { temporal: Client; taskQueue: string },
  record: PurchaseRecord,
  action: SupportAction,
): Promise<string[]> {
  const told = await tellSupportAction(deps.temporal, record.purchaseId, action);
  if (told.length > 0 || record.status !== 'needs_attention' || record.refund?.status !== 'failed') return told;
  const workflowId = refundWorkflowId(record.purchaseId);
  await deps.temporal.workflow.signalWithStart<typeof refundAgainWorkflow, [SupportAction]>('refundAgainWorkflow', {
    workflowId,
    taskQueue: deps.taskQueue,
    args: [{ purchaseId: record.purchaseId, actor: action.actor }],
    signal: supportActionSignal,
    signalArgs: [action],
    typedSearchAttributes: searchAttributes(record, record.status),
  });
  return [workflowId];
}

/**
 * Starts (or joins) the refund of money that arrived on a session that named a purchase without
 * being its own. A session whose saga already ended (refunded, refused, settled) is left as its
 * record says: an event of it delivered again is answered, not turned into a 503 Stripe retries for days.
 */
export async function startStrayRefund(
  c: { temporal: Client; taskQueue: string },
  input: StrayPaymentInput,
): Promise<void> {
  try {
    await c.temporal.workflow.start<typeof strayPaymentWorkflow>('strayPaymentWorkflow', {
      workflowId: strayPaymentWorkflowId(input.sessionId),
      taskQueue: c.taskQueue,
      args: [input],
      workflowIdConflictPolicy: 'USE_EXISTING',
      workflowIdReusePolicy: 'REJECT_DUPLICATE',
    });
  } catch (err) {
    if (!(err instanceof WorkflowExecutionAlreadyStartedError)) throw err;
  }
}

/**
 * Support's word to the refund saga of a stray payment (`stray-<sessionId>`) that waits on a refund
 * Stripe refused or that failed. False when that saga is not running.
 */
export async function tellStraySupportAction(
  temporal: Client,
  sessionId: string,
  action: SupportAction,
): Promise<boolean> {
  return signalIfRunning(temporal, strayPaymentWorkflowId(sessionId), supportActionSignal, action);
}
