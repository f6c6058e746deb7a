import { WorkflowNotFoundError, type Client, type WorkflowExecutionInfo } from '@temporalio/client';
import type { Db } from '../store/db';
import { listStrayPayments, type StrayPayment } from '../store/payments';
import { getPurchase, listNeedingAttention, listUnsettledSince, type PurchaseRecord } from '../store/purchases';
import { purchaseWorkflowId, refundWorkflowId, strayPaymentWorkflowId } from '../vocabulary';
import { purchaseStateQuery } from '../workflows/definitions';
import { purchaseIdOf, type StuckSaga } from './stuck-finding';
import { forEachLimit, formatDuration } from './temporal-describe';

// The database side of `sagas stuck`: purchase records no saga will settle, and money that waits for
// support (a purchase or a stray payment whose settling step Stripe refused, or whose refund failed;
// its saga retries with backoff and listens for support's word, so it is reported whatever its age).
// Read-only: SELECTs, describes and queries.

const CONCURRENCY = 8;
/** A purchaseState query needs a worker: without one, do not hang the report on it. */
const QUERY_DEADLINE_MS = 3_000;

interface Waiting {
  workflowId: string;
  workflowType: string;
  taskQueue?: string;
  startedAt?: string;
  runId?: string;
}

/** The running ones among these workflows: the sagas that would hear support's word. */
async function runningOf(client: Client, candidates: [string, string][]): Promise<Waiting[]> {
  const out: Waiting[] = [];
  for (const [workflowId, workflowType] of candidates) {
    try {
      const d = await client.workflow.getHandle(workflowId).describe();
      if (d.status.name !== 'RUNNING') continue;
      out.push({
        workflowId,
        // refund-<id> runs supportRefundWorkflow, or refundAgainWorkflow for a refund made again.
        workflowType: d.type ?? workflowType,
        taskQueue: d.taskQueue,
        startedAt: d.startTime.toISOString(),
        runId: d.runId,
      });
    } catch (err) {
      if (!(err instanceof WorkflowNotFoundError)) throw err;
    }
  }
  return out;
}

function whoWaits(waiting: Waiting[], retry: string): string {
  if (waiting.length === 0) return 'no saga of it is running: nothing will retry it';
  return `${waiting.map((w) => w.workflowId).join(' and ')} ${waiting.length > 1 ? 'wait' : 'waits'} for support (${retry})`;
}

/** Why money waits for support: the recorded reason, and the refund's failure when the reason does not already say it. */
export function whyItWaits(reason: string | undefined, refundFailure: string | undefined): string {
  const why = reason ?? 'no reason recorded';
  return refundFailure && !why.includes(refundFailure) ? `${why}; refund failed: ${refundFailure}` : why;
}

function attentionReason(reason: string | undefined, refundFailure: string | undefined): string {
  return `needs attention: ${whyItWaits(reason, refundFailure)}`;
}

/**
 * Purchase records in `needs_attention`, each with Stripe's message and the sagas that wait for
 * support (the purchase saga, its support refund). With `taskQueue`, only those whose waiting saga
 * runs there.
 */
export async function findAttentionRecords(
  client: Client,
  db: Db,
  o: { sku?: string; limit: number; taskQueue?: string },
): Promise<{ stuck: StuckSaga[]; truncated: boolean }> {
  const rows = await listNeedingAttention(db, { sku: o.sku, limit: o.limit + 1 });
  const stuck: StuckSaga[] = [];
  await forEachLimit(rows.slice(0, o.limit), CONCURRENCY, async (r: PurchaseRecord) => {
    const waiting = await runningOf(client, [
      [purchaseWorkflowId(r.purchaseId), 'purchaseWorkflow'],
      [refundWorkflowId(r.purchaseId), 'supportRefundWorkflow'],
    ]);
    if (o.taskQueue && !waiting.some((w) => w.taskQueue === o.taskQueue)) return;
    const first = waiting[0];
    stuck.push({
      workflowId: first?.workflowId ?? purchaseWorkflowId(r.purchaseId),
      runId: first?.runId,
      workflowType: first?.workflowType ?? 'purchaseWorkflow',
      taskQueue: first?.taskQueue,
      purchaseId: r.purchaseId,
      status: r.status,
      sku: r.sku,
      buyerId: r.buyerId,
      holdExpiresAt: r.holdExpiresAt,
      startedAt: first?.startedAt ?? r.createdAt,
      kinds: ['needs_attention'],
      reason: `${attentionReason(r.reason, r.refund?.failureReason)}; ${whoWaits(waiting, `support retry or settle ${r.purchaseId}`)}`,
    });
  });
  return { stuck, truncated: rows.length > o.limit };
}

/**
 * Why a running purchase saga flagged `needs_attention`, from the saga itself (its purchaseState
 * query): for a report made without the database.
 */
export async function askWhy(client: Client, info: WorkflowExecutionInfo): Promise<string> {
  const retry = `support retry or settle ${purchaseIdOf(info.workflowId)}`;
  try {
    const handle = client.workflow.getHandle(info.workflowId, info.runId);
    // eslint-disable-next-line no-restricted-syntax -- a Temporal query of the saga's state, not SQL
    const state = await client.withDeadline(Date.now() + QUERY_DEADLINE_MS, () => handle.query(purchaseStateQuery));
    return `${attentionReason(state.reason, state.refund?.failureReason)}; ${info.workflowId} waits for support (${retry})`;
  } catch (err) {
    return `needs attention (the saga did not answer its purchaseState query: ${(err as Error).message}; its reason is on the record, see it with DATABASE_URL); ${info.workflowId} waits for support (${retry})`;
  }
}

/** Stray payments (money on a foreign session naming one of our purchases) whose refund needs support. */
export async function findStrayAttention(
  client: Client,
  db: Db,
  o: { sku?: string; limit: number; taskQueue?: string },
): Promise<{ stuck: StuckSaga[]; truncated: boolean }> {
  const strays = await listStrayPayments(db, { status: 'needs_attention' });
  const stuck: StuckSaga[] = [];
  await forEachLimit(strays.slice(0, o.limit), CONCURRENCY, async (s: StrayPayment) => {
    const claimed = await getPurchase(db, s.claimedPurchase);
    if (o.sku && claimed?.sku !== o.sku) return;
    const workflowId = strayPaymentWorkflowId(s.sessionId);
    const waiting = await runningOf(client, [[workflowId, 'strayPaymentWorkflow']]);
    if (o.taskQueue && waiting[0]?.taskQueue !== o.taskQueue) return;
    const amount = s.amountCents !== undefined ? ` of ${s.amountCents} ${s.currency ?? ''} minor units` : '';
    stuck.push({
      workflowId,
      runId: waiting[0]?.runId,
      workflowType: 'strayPaymentWorkflow',
      taskQueue: waiting[0]?.taskQueue,
      purchaseId: s.claimedPurchase,
      sessionId: s.sessionId,
      status: s.status,
      sku: claimed?.sku,
      startedAt: waiting[0]?.startedAt ?? s.createdAt,
      kinds: ['stray_payment'],
      reason:
        `stray payment${amount} on session ${s.sessionId} naming ${s.claimedPurchase} (${s.why}) ` +
        `${attentionReason(s.detail, undefined)}; ${whoWaits(waiting, `support retry-stray or settle-stray ${s.sessionId}`)}`,
    });
  });
  return { stuck, truncated: strays.length > o.limit };
}

/** Purchase records still holding or awaiting payment, untouched since the cutoff, whose saga is not running. */
export async function findOrphans(
  client: Client,
  db: Db,
  o: { cutoff: Date; limit: number; sku?: string; now: Date; runningIds: Set<string> },
): Promise<{ stuck: StuckSaga[]; truncated: boolean }> {
  const rows = await listUnsettledSince(db, { before: o.cutoff, sku: o.sku, limit: o.limit + 1 });
  const stuck: StuckSaga[] = [];
  await forEachLimit(rows.slice(0, o.limit), CONCURRENCY, async (r) => {
    const workflowId = purchaseWorkflowId(r.purchaseId);
    if (o.runningIds.has(workflowId)) return;
    let where: string;
    try {
      const d = await client.workflow.getHandle(workflowId).describe();
      if (d.status.name === 'RUNNING') return;
      where = `its saga ${workflowId} is ${d.status.name.toLowerCase()}`;
    } catch (err) {
      if (!(err instanceof WorkflowNotFoundError)) throw err;
      where = `no saga ${workflowId} exists (it never started, or its history was deleted)`;
    }
    stuck.push({
      workflowId,
      workflowType: 'purchaseWorkflow',
      purchaseId: r.purchaseId,
      status: r.status,
      sku: r.sku,
      buyerId: r.buyerId,
      holdExpiresAt: r.holdExpiresAt,
      startedAt: r.createdAt,
      kinds: ['orphaned'],
      reason: `the record is ${r.status} (last changed ${formatDuration(o.now.getTime() - Date.parse(r.updatedAt))} ago) but ${where}`,
    });
  });
  return { stuck, truncated: rows.length > o.limit };
}
