import { Router } from '@koa/router';
import { WorkflowNotFoundError } from '@temporalio/client';
import { cancelPurchase } from '../../client/purchases';
import { getPurchase } from '../../store/purchases';
import { isFinal, isPaid, type PurchaseState } from '../../vocabulary';
import { requestId, requestLog } from '../access-log';
import { buyerOf, readerOf } from '../auth';
import type { ApiDeps } from '../deps';
import { Problem } from '../problem';
import { checkoutQueueView } from '../checkout-pace';
import { deadline, placePurchase, purchaseView, unavailable, visiblePurchase } from '../purchase-flow';
import { receiptOf, receiptView } from '../receipt';

/** How long a cancel waits for the saga to give the hold back before answering with what it knows. */
const CANCEL_TIMEOUT_MS = 5_000;

/**
 * Purchase routes. POST admits the request (store), then starts the purchase saga and waits until
 * its hold is taken and its Checkout Session open (update-with-start). The purchase id comes from
 * the Idempotency-Key, so a retried POST joins the same purchase and never takes a second hold.
 */
export function purchaseRoutes(deps: ApiDeps): Router {
  const router = new Router();
  const sagas = { temporal: deps.temporal, taskQueue: deps.taskQueue };

  router.post('/v1/purchases', async (ctx) => {
    const placed = await placePurchase(deps, {
      buyerId: await buyerOf(ctx, deps.buyers),
      ip: ctx.ip,
      idempotencyKey: ctx.get('idempotency-key'),
      body: ctx.request.body,
      respondAsync: /\brespond-async\b/i.test(ctx.get('prefer')),
      admissionToken: ctx.get('admission-token') || undefined,
      altcha: ctx.get('altcha') || undefined,
      requestId: requestId(ctx),
      log: requestLog(ctx),
    });
    ctx.status = placed.status;
    if (placed.location) ctx.set('Location', placed.location);
    if (placed.retryAfter !== undefined) ctx.set('Retry-After', String(placed.retryAfter));
    ctx.body = placed.body;
  });

  router.get('/v1/purchases/:id', async (ctx) => {
    const record = await visiblePurchase(deps, ctx.params.id, await readerOf(ctx, deps));
    const queue = await checkoutQueueView(deps, record);
    // In the line: when to read it again (its session cannot open before its slot).
    if (queue) ctx.set('Retry-After', String(queue.nextPollSeconds));
    ctx.body = {
      ...purchaseView(record, queue),
      ...receiptView(await receiptOf(deps, record)),
    };
  });

  /** The buyer gives up: the saga releases the hold and expires the session (a cancel update). 409 once paid. */
  router.post('/v1/purchases/:id/cancel', async (ctx) => {
    const id = ctx.params.id;
    const record = await visiblePurchase(deps, id, { support: false, buyerId: await buyerOf(ctx, deps.buyers) });
    if (isPaid(record.status)) throw new Problem(409, 'not-cancellable', `purchase ${id} is ${record.status}`);
    if (isFinal(record.status)) {
      ctx.body = purchaseView(record);
      return;
    }
    let now: PurchaseState;
    try {
      now = await deadline(CANCEL_TIMEOUT_MS, 'cancelling the purchase', cancelPurchase(sagas, id));
    } catch (err) {
      // The saga closed a moment ago (paid, say), or is slow to settle: answer from its record.
      if (!(err instanceof WorkflowNotFoundError) && !(err instanceof Problem)) {
        const closed = (await getPurchase(deps.db, id))!;
        if (!isFinal(closed.status)) {
          requestLog(ctx).error({ err }, `cancel ${id}: could not reach its workflow`);
          throw unavailable('could not reach the purchase; try again');
        }
      }
      now = (await getPurchase(deps.db, id))!;
    }
    if (isPaid(now.status)) throw new Problem(409, 'not-cancellable', `purchase ${id} was paid`);
    ctx.body = purchaseView(now);
  });

  return router;
}
