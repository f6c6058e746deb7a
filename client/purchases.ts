import { WithStartWorkflowOperation, type Client } from '@temporalio/client';
import type { PaymentEvent, ProductTerms, PurchaseInput, PurchaseState, PurchaseStatus } from '../vocabulary';
import { purchaseWorkflowId } from '../vocabulary';
import {
  BuyerIdKey,
  cancelUpdate,
  holdAnsweredUpdate,
  paymentEventSignal,
  PurchaseStatusKey,
  SkuKey,
} from '../workflows/definitions';
import type { purchaseWorkflow } from '../workflows/purchase';

// The client side of the purchase saga: how the API starts it, cancels it and hands it Stripe's
// events. Workflow ids are business ids (`purchase-<purchaseId>`), so every call is idempotent.

export interface SagaClient {
  temporal: Client;
  taskQueue: string;
}

/**
 * The deadline of a call that waits for the saga (an update: the hold, the session, a cancel). The
 * callers answer sooner (PURCHASE_TIMEOUT_MS, the cancel's 5 s); this only keeps the call from
 * outliving them for ever. Calls that do not wait take the connection's deadline (config/clients.ts).
 */
export const SAGA_WAIT_MS = 60_000;

/** A purchase saga's search attributes (its SKU, buyer and status), as every start sets them. */
export function searchAttributes(p: { sku: string; buyerId: string }, status: PurchaseStatus) {
  return [
    { key: SkuKey, value: p.sku },
    { key: BuyerIdKey, value: p.buyerId },
    { key: PurchaseStatusKey, value: status },
  ];
}

function startOptions(c: SagaClient, input: PurchaseInput) {
  return {
    workflowId: purchaseWorkflowId(input.purchaseId),
    taskQueue: c.taskQueue,
    args: [input] as [PurchaseInput],
    workflowIdConflictPolicy: 'USE_EXISTING' as const,
    workflowIdReusePolicy: 'REJECT_DUPLICATE' as const,
    typedSearchAttributes: searchAttributes(input, 'holding'),
  };
}

/**
 * Starts the purchase saga (or joins the one this purchase id already has) and waits until its hold
 * step answered (taken, refused, or failed): one round trip by update-with-start, answered with the
 * saga's first workflow task. The session opens after, on the Stripe queue (store/checkout-watch.ts).
 */
export async function startPurchase(
  c: SagaClient,
  input: PurchaseInput,
  waitMs = SAGA_WAIT_MS,
): Promise<PurchaseState> {
  const start = new WithStartWorkflowOperation<typeof purchaseWorkflow>('purchaseWorkflow', startOptions(c, input));
  return c.temporal.withDeadline(Date.now() + waitMs, () =>
    c.temporal.workflow.executeUpdateWithStart(holdAnsweredUpdate, { startWorkflowOperation: start }),
  );
}

/**
 * Starts the purchase saga (or finds it) without waiting for its hold: the answer of `Prefer:
 * respond-async`, and of a purchase whose turn in the Stripe budget's pace is later (`startDelayMs`:
 * the saga, and so its hold, starts then; Temporal keeps the start, whatever becomes of this process).
 */
export async function beginPurchase(c: SagaClient, input: PurchaseInput, startDelayMs = 0): Promise<void> {
  await c.temporal.workflow.start<typeof purchaseWorkflow>('purchaseWorkflow', {
    ...startOptions(c, input),
    ...(startDelayMs > 0 ? { startDelay: startDelayMs } : {}),
  });
}

/** Asks the saga to give the hold back; resolves with its state once it has (or once money is on its way). */
export async function cancelPurchase(c: SagaClient, purchaseId: string, waitMs = SAGA_WAIT_MS): Promise<PurchaseState> {
  return c.temporal.withDeadline(Date.now() + waitMs, () =>
    c.temporal.workflow.getHandle(purchaseWorkflowId(purchaseId)).executeUpdate(cancelUpdate),
  );
}

/**
 * Hands a verified Stripe event to its purchase's saga with signal-with-start: a running saga gets
 * the signal; a closed one is followed up by a new run that settles the payment from the record,
 * under the product's `terms` (its limits per card and per address are checked on that path too).
 */
export async function deliverPaymentEvent(
  c: SagaClient,
  purchase: { purchaseId: string; sku: string; buyerId: string; quantity: number; status: PurchaseStatus },
  event: PaymentEvent,
  /** The webhook request's id, on the log lines of a follow-up run this starts. */
  requestId?: string,
  /** The product's terms, for a follow-up run (a running saga has its own). */
  terms?: ProductTerms,
): Promise<void> {
  await c.temporal.workflow.signalWithStart<typeof purchaseWorkflow, [PaymentEvent]>('purchaseWorkflow', {
    workflowId: purchaseWorkflowId(purchase.purchaseId),
    taskQueue: c.taskQueue,
    args: [
      {
        purchaseId: purchase.purchaseId,
        sku: purchase.sku,
        buyerId: purchase.buyerId,
        quantity: purchase.quantity,
        followUp: true,
        ...(terms ? { terms } : {}),
        ...(requestId ? { requestId } : {}),
      },
    ],
    signal: paymentEventSignal,
    signalArgs: [event],
    workflowIdReusePolicy: 'ALLOW_DUPLICATE',
    // A follow-up run must be as findable in the Temporal UI as the first one.
    typedSearchAttributes: searchAttributes(purchase, purchase.status),
  });
}
