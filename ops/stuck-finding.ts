import type { PendingActivity } from './temporal-describe';

// What `sagas stuck` reports about one saga: shared by the finder over Temporal (stuck-sagas.ts) and
// the one over the database (stuck-records.ts), which both build these.

export type StuckKind =
  /** (a) the hold's expiry passed long ago and the saga still holds or awaits payment. */
  | 'hold_lapsed'
  /** (b) the saga has been taking its hold or opening its session for longer than the threshold. */
  | 'stuck_holding'
  /** (c) an activity keeps failing and is being retried. */
  | 'activity_retrying'
  /** The workflow code itself keeps failing (for example non-determinism after a deploy). */
  | 'workflow_task_failing'
  /** Work is waiting and no worker picks it up. */
  | 'no_worker'
  /** The purchase record is not final but no saga is running for it (needs the database). */
  | 'orphaned'
  /** Stripe refused a step that settles the money (or a refund failed): support retries or settles it. No threshold. */
  | 'needs_attention'
  /** Money on a foreign session naming one of our purchases, whose refund needs support (needs the database). */
  | 'stray_payment';

export interface StuckSaga {
  workflowId: string;
  runId?: string;
  workflowType: string;
  taskQueue?: string;
  purchaseId: string;
  /** The PurchaseStatus search attribute (or the record's status for a finding from the database). */
  status?: string;
  /** A stray payment's Checkout Session (its saga is `stray-<sessionId>`). */
  sessionId?: string;
  sku?: string;
  buyerId?: string;
  holdExpiresAt?: string;
  startedAt?: string;
  kinds: StuckKind[];
  /** Why it is reported, for an operator: every finding, `; `-separated. */
  reason: string;
  /** The most retried pending activity, when one has failed at least MIN_FAILING_ATTEMPTS (stuck-sagas.ts) times. */
  pendingActivity?: PendingActivity;
}

/** `purchase-<id>` and `refund-<id>` (vocabulary) carry the purchase id. */
export function purchaseIdOf(workflowId: string): string {
  const m = /^(?:purchase|refund)-(.+)$/.exec(workflowId);
  return m ? m[1] : workflowId;
}
