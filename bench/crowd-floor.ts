import { randomUUID } from 'node:crypto';
import type { Client } from '@temporalio/client';
import { searchAttributes } from '../client/purchases';
import type { Drive, Phase } from './crowd-report';

/** A workflow type no worker registers, on a task queue no worker polls: the start is all there is. */
const PROBE_TYPE = 'crowdFloorProbe';

/**
 * Temporal's own floor under the crowd's winners, measured in the same run: `count` workflow starts
 * shaped like a saga's (its three search attributes, an input of the same size), `concurrency` in
 * flight, on a task queue no worker polls, so the figure is the server's work alone. Each winner's
 * 202 waits for one such start. Run after the crowd (it does not compete with it), only on the stack
 * the bench started; the probes close themselves after a minute (execution timeout).
 */
export async function startsFloor(
  temporal: Client,
  opts: { sku: string; count: number; concurrency: number; drive: Drive },
): Promise<Phase> {
  const taskQueue = `crowd-floor-${randomUUID()}`;
  const sku = `${opts.sku}-floor`;
  return opts.drive(`floor: ${opts.count} starts alone`, opts.count, opts.concurrency, async (n) => {
    const buyerId = `buyer-${n}`;
    const purchaseId = `pur_${randomUUID().replace(/-/g, '').slice(0, 24)}`;
    await temporal.workflow.start(PROBE_TYPE, {
      taskQueue,
      workflowId: `purchase-${purchaseId}`,
      args: [{ purchaseId, sku, buyerId, quantity: 1, requestId: randomUUID() }],
      workflowExecutionTimeout: '1 minute',
      typedSearchAttributes: searchAttributes({ sku, buyerId }, 'holding'),
    });
    return { cls: 'ok' };
  });
}
