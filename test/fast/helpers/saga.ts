import type { WorkflowHandle } from '@temporalio/client';
import { purchaseWorkflow } from '../../../workflows';
import { purchaseStateQuery } from '../../../workflows/definitions';
import type { PurchaseInput } from '../../../vocabulary';
import type { FastTemporal } from './temporal';
import type { Case } from './world';

// Driving one purchase saga of the fast tier: start it for a case, wait for what its activities did.

export type Saga = WorkflowHandle<typeof purchaseWorkflow>;

export function startPurchase(temporal: FastTemporal, c: Case, patch: Partial<PurchaseInput> = {}): Promise<Saga> {
  return temporal.env.client.workflow.start(purchaseWorkflow, {
    taskQueue: temporal.taskQueue,
    workflowId: `purchase-${c.id}`,
    args: [c.input(patch)],
  });
}

/** Resolves once `done` holds (checked every 20 ms); fails naming `what` after `ms`. */
export async function until(done: () => boolean, what: string, ms = 15_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!done()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** Once the Checkout Session is open (the activity ran and wrote the record). */
export function sessionOpen(c: Case): Promise<void> {
  return until(() => c.record?.sessionId !== undefined, `${c.id}'s Checkout Session`);
}

/** Once the saga itself knows its session (it read the session step's answer), not only the record. */
export async function sagaKnowsSession(saga: Saga): Promise<void> {
  const deadline = Date.now() + 15_000;
  while (!(await saga.query(purchaseStateQuery)).sessionId) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${saga.workflowId} to know its session`);
    await sleep(20);
  }
}

/** Once the activity has been called `times` times. */
export function called(c: Case, name: Parameters<Case['count']>[0], times = 1): Promise<void> {
  return until(() => c.count(name) >= times, `${name} × ${times} for ${c.id}`);
}

/** A promise that resolves after `ms`. */
export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
