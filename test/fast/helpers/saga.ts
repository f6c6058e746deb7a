import type { WorkflowHandle } from '@temporalio/client';
import { purchaseWorkflow } from '../../../workflows';
import { purchaseStateQuery } from '../../../workflows/definitions';
import type { PurchaseInput } from '../../../vocabulary';
import type { FastTemporal } from './temporal';
import type { Case } from './world';
import { sleep, until, UNTIL_MS } from './wait';

export { gate, idle, sleep, until } from './wait';

// Driving one purchase saga of the fast tier: start it for a case, wait for what its activities did.

export type Saga = WorkflowHandle<typeof purchaseWorkflow>;

export function startPurchase(temporal: FastTemporal, c: Case, patch: Partial<PurchaseInput> = {}): Promise<Saga> {
  return temporal.env.client.workflow.start(purchaseWorkflow, {
    taskQueue: temporal.taskQueue,
    workflowId: `purchase-${c.id}`,
    args: [c.input(patch)],
  });
}

/** Once the Checkout Session is open (the activity ran and wrote the record). */
export function sessionOpen(c: Case): Promise<void> {
  return until(() => c.record?.sessionId !== undefined, `${c.id}'s Checkout Session`).then(() => undefined);
}

/** Once the saga itself knows its session (it read the session step's answer), not only the record. */
export async function sagaKnowsSession(saga: Saga): Promise<void> {
  // As long as until() waits (wait.ts): a stall of the machine must not be taken for a wrong saga.
  const deadline = Date.now() + UNTIL_MS;
  while (!(await saga.query(purchaseStateQuery)).sessionId) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${saga.workflowId} to know its session`);
    await sleep(20);
  }
}

/** Once the activity has been called `times` times. */
export function called(c: Case, name: Parameters<Case['count']>[0], times = 1): Promise<void> {
  return until(() => c.count(name) >= times, `${name} × ${times} for ${c.id}`).then(() => undefined);
}
