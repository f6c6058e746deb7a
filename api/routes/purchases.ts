import { Router } from '@koa/router';
import { cancelPurchase } from '../../client/purchases';
import { getPurchase } from '../../store/purchases';
import { isFinal, isPaid, type PurchaseState } from '../../vocabulary';
import { requestId, requestLog } from '../access-log';
import { buyerOf, readerOf } from '../auth';
import type { ApiDeps } from '../deps';
import { Problem } from '../problem';
import { checkoutQueueView } from '../checkout-pace';
import { purchaseView, unavailable } from '../purchase-answers';
import { deadline, placePurchase, visiblePurchase } from '../purchase-flow';
import { receiptOf, receiptView } from '../receipt';

/** How long a cancel waits for the saga to give the hold back before answering with what it knows. */
const CANCEL_TIMEOUT_MS = 5_000;
/** How long a cancel the saga answered with money on its way waits for the purchase to end (paid, or released). */
const CANCEL_SETTLE_MS = 2_000;

/** The purchase once it has ended, or as it is at `until`. */
async function endedBy(deps: ApiDeps, id: string, until: number): Promise<PurchaseState> {
  for (;;) {
    const record = (await getPurchase(deps.db, id))!;
    if (isFinal(record.status) || Date.now() >= until || deps.lifecycle.closing.aborted) return record;
    await new Promise((r) => setTimeout(r, 100));
  }
}

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

  /**
   * The buyer gives up: the saga releases the hold and expires the session (a cancel update), 200
   * once it has. 409 once paid, or once money is on its way (the saga answers the cancel without
   * releasing: a payment that arrived first wins). 503 when the saga did not answer in time (asking
   * again is safe: the cancel stands).
   */
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
      const closing = deps.lifecycle.closing;
      now = await deadline(CANCEL_TIMEOUT_MS, 'cancelling the purchase', cancelPurchase(sagas, id), closing);
      // Answered without a release: money is on its way. Paid, it becomes a sale in a moment; a
      // delayed payment that failed gives the unit back; one still settling keeps it.
      if (!isFinal(now.status)) now = await endedBy(deps, id, Date.now() + CANCEL_SETTLE_MS);
      if (!isFinal(now.status) && !isPaid(now.status)) {
        throw new Problem(
          409,
          'not-cancellable',
          `a payment of purchase ${id} is on its way (${now.status}): it is no longer cancellable`,
        );
      }
    } catch (err) {
      if (err instanceof Problem && err.status === 409) throw err;
      // The saga closed a moment ago (paid, say), or is slow to settle: answer from its record.
      now = (await getPurchase(deps.db, id))!;
      if (!isFinal(now.status)) {
        // The deadline passed (a Problem): the cancel stands, and asking again answers once it is done.
        if (err instanceof Problem) throw unavailable('the cancel is under way; ask again');
        requestLog(ctx).error({ err }, `cancel ${id}: could not reach its workflow`);
        throw unavailable('could not reach the purchase; try again');
      }
    }
    if (isPaid(now.status)) throw new Problem(409, 'not-cancellable', `purchase ${id} was paid`);
    ctx.body = purchaseView(now);
  });

  return router;
}
