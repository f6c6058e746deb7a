import { WorkflowNotFoundError, type Client, type WorkflowExecutionInfo } from '@temporalio/client';
import type { Db } from '../store/db';
import { inCheckoutLine } from '../store/checkout-line';
import { HOLDING_STATUSES } from '../vocabulary';
import { BuyerIdKey, HoldExpiresAtKey, PurchaseStatusKey, SkuKey } from '../workflows/definitions';
import { askWhy, findAttentionRecords, findOrphans, findStrayAttention } from './stuck-records';
import { purchaseIdOf, type StuckKind, type StuckSaga } from './stuck-finding';
import { describeActivity, forEachLimit, formatDuration, toPendingActivity, tsToDate } from './temporal-describe';

export { formatDuration, parseDuration, type PendingActivity } from './temporal-describe';
export { purchaseIdOf, type StuckKind, type StuckSaga } from './stuck-finding';

/** The saga workflow types this finder looks at (their registered names). */
export const SAGA_WORKFLOW_TYPES = ['purchaseWorkflow', 'supportRefundWorkflow', 'refundAgainWorkflow'] as const;

/** A pending activity at or past this attempt is reported: a transient fault heals within two retries. */
export const MIN_FAILING_ATTEMPTS = 3;

/** Below this, a workflow task waiting for a worker is ordinary scheduling latency, whatever the threshold. */
const MIN_WORKER_WAIT_MS = 10_000;
const DEFAULT_LIMIT = 1000;
const DESCRIBE_CONCURRENCY = 8;

export interface FindStuckOptions {
  /** How far past the hold expiry (a) or the start (b) a saga must be to count as stuck. */
  olderThanMs: number;
  now?: Date;
  /** At most this many workflows per visibility query (and records from the database). Default 1000. */
  limit?: number;
  /** Only sagas of this SKU (a purchase search attribute; support refund sagas carry none). */
  sku?: string;
  /** Only sagas on this task queue. */
  taskQueue?: string;
  /**
   * With the database: purchase records left non-final with no saga running, and purchases and stray
   * payments in `needs_attention` whatever their saga's state.
   */
  db?: Db;
}

export interface StuckScan {
  stuck: StuckSaga[];
  /** Running saga workflows whose pending activities were examined. */
  scanned: number;
  /** A query hit `limit`: there may be more. */
  truncated: boolean;
  filters: StuckSagaFilters;
}

export interface StuckSagaFilters {
  /** (a) the hold expired before the cutoff and the saga has not settled it. */
  holdLapsed: string;
  /** (b) still taking the hold or opening the session since before the cutoff. */
  stuckHolding: string;
  /** (c) every running saga: open one and look at its Pending Activities (attempts and last failure). */
  running: string;
  /** (d) purchase sagas waiting for support after Stripe refused a step (any age). */
  needsAttention: string;
}

const quote = (value: string): string => {
  // Temporal's list filter has no escape rules worth trusting: refuse what could break out of the string.
  if (/["\\\n]/.test(value)) throw new Error(`cannot use ${JSON.stringify(value)} in a Temporal list filter`);
  return `"${value}"`;
};
const list = (values: readonly string[]): string => `(${values.map(quote).join(',')})`;

/**
 * The Temporal visibility filters behind `npm run sagas -- stuck`, pasteable into the Temporal UI's
 * workflow search. `cutoff` is now minus the threshold (a Date, or a placeholder for documentation).
 */
export function stuckSagaFilters(
  cutoff: Date | string,
  scope: { sku?: string; taskQueue?: string } = {},
): StuckSagaFilters {
  const at = quote(typeof cutoff === 'string' ? cutoff : cutoff.toISOString());
  const narrow = [
    ...(scope.sku ? [`Sku=${quote(scope.sku)}`] : []),
    ...(scope.taskQueue ? [`TaskQueue=${quote(scope.taskQueue)}`] : []),
  ];
  const running = ['ExecutionStatus="Running"'];
  const purchase = [...running, `WorkflowType=${quote('purchaseWorkflow')}`];
  const and = (...parts: string[]) => [...parts, ...narrow].join(' AND ');
  return {
    holdLapsed: and(...purchase, `PurchaseStatus IN ${list(HOLDING_STATUSES)}`, `HoldExpiresAt < ${at}`),
    stuckHolding: and(...purchase, `PurchaseStatus=${quote('holding')}`, `StartTime < ${at}`),
    running: and(...running, `WorkflowType IN ${list(SAGA_WORKFLOW_TYPES)}`),
    // The refund sagas carry PurchaseStatus too (runs started before they did are found from the records).
    needsAttention: and(
      ...running,
      `WorkflowType IN ${list(SAGA_WORKFLOW_TYPES)}`,
      `PurchaseStatus=${quote('needs_attention')}`,
    ),
  };
}

/** Stuck purchase and refund sagas, for operators. See `scanStuckSagas` for what counts as stuck. */
export async function findStuckSagas(client: Client, opts: FindStuckOptions): Promise<StuckSaga[]> {
  return (await scanStuckSagas(client, opts)).stuck;
}

/**
 * Finds sagas that should have moved on and did not: (a) a purchase still holding or awaiting
 * payment `olderThanMs` after its hold expired (the saga should have released it); (b) a purchase
 * still taking its hold `olderThanMs` after it started; (c) any running purchase or refund saga with
 * an activity on its MIN_FAILING_ATTEMPTS-th attempt or later, with its last failure; (d) whatever
 * its age, a purchase saga waiting for support in `needs_attention`, with Stripe's message; plus a
 * workflow task that keeps failing or waits for a worker, and, given the database, purchase records
 * left non-final with no saga running and purchases and stray payments in `needs_attention` (a
 * purchase found both ways is reported once). Read-only: visibility queries, describes, queries and
 * SELECTs.
 */
export async function scanStuckSagas(client: Client, opts: FindStuckOptions): Promise<StuckScan> {
  const now = opts.now ?? new Date();
  const limit = opts.limit ?? DEFAULT_LIMIT;
  const cutoff = new Date(now.getTime() - opts.olderThanMs);
  const filters = stuckSagaFilters(cutoff, opts);
  const found = new Map<string, StuckSaga>();
  let truncated = false;

  const note = (info: WorkflowExecutionInfo, kind: StuckKind, reason: string): StuckSaga => {
    const key = `${info.workflowId}/${info.runId}`;
    const saga = found.get(key) ?? fromInfo(info);
    found.set(key, saga);
    if (!saga.kinds.includes(kind)) {
      saga.kinds.push(kind);
      saga.reason = saga.reason ? `${saga.reason}; ${reason}` : reason;
    }
    return saga;
  };
  const query = async (q: string): Promise<WorkflowExecutionInfo[]> => {
    const out: WorkflowExecutionInfo[] = [];
    for await (const info of client.workflow.list({ query: q, pageSize: Math.min(limit, 1000) })) {
      if (out.length >= limit) {
        truncated = true;
        break;
      }
      out.push(info);
    }
    return out;
  };

  const [lapsed, holding, running, attention] = await Promise.all([
    query(filters.holdLapsed),
    query(filters.stuckHolding),
    query(filters.running),
    query(filters.needsAttention),
  ]);
  for (const info of lapsed) {
    const expires = info.typedSearchAttributes.get(HoldExpiresAtKey);
    const status = info.typedSearchAttributes.get(PurchaseStatusKey);
    const ago = expires ? ` (${formatDuration(now.getTime() - expires.getTime())} ago)` : '';
    note(
      info,
      'hold_lapsed',
      `hold lapsed at ${expires?.toISOString()}${ago} but the saga is still ${status}: it should have released the hold`,
    );
  }
  // Given the database, a purchase waiting its turn in the line for Checkout Sessions counts from its
  // slot, not its start: at a drop the line can be minutes long, and none of it is stuck.
  const inLine = opts.db
    ? await inCheckoutLine(
        opts.db,
        holding.map((info) => purchaseIdOf(info.workflowId)),
        cutoff,
      )
    : new Set<string>();
  for (const info of holding) {
    if (inLine.has(purchaseIdOf(info.workflowId))) continue;
    note(
      info,
      'stuck_holding',
      `still holding ${formatDuration(now.getTime() - info.startTime.getTime())} after it started: the hold or the Checkout Session step has not finished`,
    );
  }

  // (c) and the workflow-task checks need each running saga's description: bounded concurrency,
  // so a flash sale's thousands of open purchases do not turn into thousands of parallel RPCs.
  await forEachLimit(running, DESCRIBE_CONCURRENCY, async (info) => {
    let raw;
    try {
      raw = (await client.workflow.getHandle(info.workflowId, info.runId).describe()).raw;
    } catch (err) {
      if (err instanceof WorkflowNotFoundError) return; // closed and gone since the list
      throw err;
    }
    const activities = (raw.pendingActivities ?? [])
      .map(toPendingActivity)
      .filter((a) => a.attempt >= MIN_FAILING_ATTEMPTS)
      .sort((x, y) => y.attempt - x.attempt);
    for (const a of activities) {
      const saga = note(info, 'activity_retrying', describeActivity(a));
      saga.pendingActivity ??= a;
    }
    const task = raw.pendingWorkflowTask;
    if (task && (task.attempt ?? 0) >= MIN_FAILING_ATTEMPTS) {
      note(
        info,
        'workflow_task_failing',
        `workflow task failing: attempt ${task.attempt} (its error is in the workflow's history; non-determinism after a deploy is the usual cause)`,
      );
    } else if (task && !task.startedTime) {
      const scheduled = tsToDate(task.scheduledTime);
      const waited = scheduled ? now.getTime() - scheduled.getTime() : 0;
      if (waited >= Math.max(opts.olderThanMs, MIN_WORKER_WAIT_MS)) {
        note(
          info,
          'no_worker',
          `a workflow task has waited ${formatDuration(waited)} for a worker on task queue ${info.taskQueue}`,
        );
      }
    }
  });

  // Records the saga should have settled but no saga is running for (the task queue is not in the record).
  if (opts.db && !opts.taskQueue) {
    const runningIds = new Set(running.map((r) => r.workflowId));
    const orphans = await findOrphans(client, opts.db, { cutoff, limit, sku: opts.sku, now, runningIds });
    if (orphans.truncated) truncated = true;
    for (const o of orphans.stuck) found.set(o.workflowId, o);
  }

  // (d) Money waiting for support. The record says why (Stripe's message), whatever the saga's state;
  // without the database, the saga itself is asked.
  const records = opts.db
    ? await findAttentionRecords(client, opts.db, { sku: opts.sku, limit, taskQueue: opts.taskQueue })
    : { stuck: [], truncated: false };
  if (records.truncated) truncated = true;
  const byWorkflow = new Map(records.stuck.map((r) => [r.workflowId, r]));
  await forEachLimit(attention, DESCRIBE_CONCURRENCY, async (info) => {
    const record = byWorkflow.get(info.workflowId);
    byWorkflow.delete(info.workflowId);
    note(info, 'needs_attention', record?.reason ?? (await askWhy(client, info)));
  });
  for (const r of byWorkflow.values()) merge(found, r);
  if (opts.db) {
    const strays = await findStrayAttention(client, opts.db, { sku: opts.sku, limit, taskQueue: opts.taskQueue });
    if (strays.truncated) truncated = true;
    for (const s of strays.stuck) merge(found, s);
  }

  const stuck = [...found.values()].sort((x, y) => (x.startedAt ?? '').localeCompare(y.startedAt ?? ''));
  return { stuck, scanned: running.length, truncated, filters };
}

/** Adds a finding from the database to what the workflow checks found of the same saga (any run), or on its own. */
function merge(found: Map<string, StuckSaga>, finding: StuckSaga): void {
  const same = [...found.values()].find((s) => s.workflowId === finding.workflowId);
  if (!same) {
    found.set(finding.workflowId, finding);
    return;
  }
  for (const kind of finding.kinds) {
    if (same.kinds.includes(kind)) continue;
    same.kinds.push(kind);
    same.reason = same.reason ? `${same.reason}; ${finding.reason}` : finding.reason;
  }
  same.status ??= finding.status;
  same.sku ??= finding.sku;
  same.buyerId ??= finding.buyerId;
}

function fromInfo(info: WorkflowExecutionInfo): StuckSaga {
  const attrs = info.typedSearchAttributes;
  return {
    workflowId: info.workflowId,
    runId: info.runId,
    workflowType: info.type,
    taskQueue: info.taskQueue,
    purchaseId: purchaseIdOf(info.workflowId),
    status: attrs.get(PurchaseStatusKey),
    sku: attrs.get(SkuKey),
    buyerId: attrs.get(BuyerIdKey),
    holdExpiresAt: attrs.get(HoldExpiresAtKey)?.toISOString(),
    startedAt: info.startTime.toISOString(),
    kinds: [],
    reason: '',
  };
}
