import type { Admission } from '../store/admission';
import { soldOutDetail, type SoldOutOutlook } from '../store/gate';
import { contractRefundStatus, type PurchaseState } from '../vocabulary';
import type { CheckoutQueueView } from './checkout-pace';
import { invalid, Problem } from './problem';

// What a purchase order is answered: the purchase as the contract shows it, or the problem that
// refused it (before any saga ran, or from the saga's hold step). api/purchase-flow.ts decides which.

/** The answer to a purchase order that was not refused (refusals are thrown as problems). */
export interface PlacedPurchase {
  /** 201 a new purchase, 200 the one this key already made, 202 accepted (respondAsync). */
  status: 200 | 201 | 202;
  body: Record<string, unknown>;
  /** Set for 202: where the purchase can be read. */
  location?: string;
  /** Set for a 202 in the checkout line: when to read it (`Retry-After`, the line's `nextPollSeconds`). */
  retryAfter?: number;
}

export const unavailable = (detail: string, extra: Record<string, unknown> = {}, retryAfter = '2') =>
  new Problem(503, 'unavailable', detail, extra, { 'Retry-After': retryAfter });

/** The public view of a purchase (GET /v1/purchases/:id and the POST answers). */
export function purchaseView(p: PurchaseState & { settlingSince?: string }, queue?: CheckoutQueueView) {
  return {
    purchaseId: p.purchaseId,
    sku: p.sku,
    buyerId: p.buyerId,
    quantity: p.quantity,
    status: p.status === 'rejected' ? 'failed' : p.status,
    holdExpiresAt: p.holdExpiresAt ?? queue?.holdExpiresAt ?? null,
    ...(queue
      ? {
          checkoutQueue: {
            ahead: queue.ahead,
            estimatedWaitSeconds: queue.estimatedWaitSeconds,
            nextPollSeconds: queue.nextPollSeconds,
          },
        }
      : {}),
    ...(p.checkoutUrl && (p.status === 'awaiting_payment' || p.status === 'holding')
      ? { checkoutUrl: p.checkoutUrl }
      : {}),
    amountCents: p.amountCents ?? null,
    currency: p.currency ?? null,
    ...(p.reason ? { reason: p.reason } : {}),
    // A delayed payment (a bank debit) settling: nothing more to pay, the outcome comes in days.
    ...(p.status === 'awaiting_payment' && p.settlingSince ? { settlingSince: p.settlingSince } : {}),
    ...(p.refund ? { refund: refundView(p.refund) } : {}),
    ...(p.dispute ? { dispute: { status: p.dispute.status, reason: p.dispute.reason } } : {}),
    ...(p.oversold ? { oversold: true } : {}),
  };
}

/** A refund as the HTTP contract has it: its status one of three, and `settledByHand` when support settled it. */
export function refundView(r: { status: string; reason: string }): {
  status: 'pending' | 'succeeded' | 'failed';
  reason: string;
  settledByHand?: true;
} {
  return {
    status: contractRefundStatus(r.status),
    reason: r.reason,
    ...(r.status === 'settled' ? { settledByHand: true } : {}),
  };
}

/** A refusal decided before any saga ran: nothing was written for it. */
export function admissionProblem(a: Exclude<Admission, { outcome: 'new' | 'known' }>, now: number): Problem {
  switch (a.outcome) {
    case 'hold_exists':
      return new Problem(409, 'hold-exists', a.detail, { heldBy: a.heldBy });
    case 'invalid':
      return invalid([{ field: a.field, message: a.message }]);
    case 'not_admitted':
      return new Problem(403, 'not-admitted', a.detail);
    case 'not_open': {
      const wait = Math.max(1, Math.ceil((a.opensAt.getTime() - now) / 1000));
      return new Problem(
        403,
        'not-open',
        a.detail,
        { opensAt: a.opensAt.toISOString() },
        { 'Retry-After': String(wait) },
      );
    }
    case 'sold_out':
      return soldOut(a.detail, a, now);
    case 'refused':
      return a.reason === 'product_not_found'
        ? new Problem(404, 'product-not-found', a.detail)
        : new Problem(
            422,
            'limit-exceeded',
            a.detail,
            // The product term refused by, and its most: a client can offer the right quantity.
            a.limit ? { limit: a.limit.term, maxQuantity: a.limit.max } : {},
          );
  }
}

/**
 * 409 sold-out: `final` when nothing can come back, else `retryAt` (and `Retry-After`) when a unit
 * may; with no outlook, in a second.
 */
export function soldOut(
  detail: string,
  outlook: SoldOutOutlook | null,
  now: number,
  extra: Record<string, unknown> = {},
) {
  if (outlook?.final) {
    // Fewer left than asked for: how many may still be had (the most a new request may ask).
    const fewer = outlook.left ? { maxQuantity: outlook.left } : {};
    return new Problem(409, 'sold-out', detail, { ...extra, final: true, ...fewer });
  }
  const retryAt = outlook?.retryAt ?? new Date(now + 1000);
  const wait = Math.max(1, Math.ceil((retryAt.getTime() - now) / 1000));
  return new Problem(
    409,
    'sold-out',
    detail,
    { ...extra, final: false, retryAt: retryAt.toISOString() },
    { 'Retry-After': String(wait) },
  );
}

/**
 * A saga's answer as HTTP: the refusal its hold step met (one for want of a unit with `outlook`, what
 * the buyer may expect), a failure final for this key, or the purchase.
 */
export function sagaAnswer(
  state: PurchaseState,
  created: boolean,
  now: number,
  outlook: SoldOutOutlook | null = null,
): PlacedPurchase {
  const extra = { purchaseId: state.purchaseId, ...(state.heldBy ? { heldBy: state.heldBy } : {}) };
  if (state.status === 'rejected') {
    switch (state.rejection) {
      case 'hold_exists':
        throw new Problem(409, 'hold-exists', `buyer ${state.buyerId} already holds ${state.sku}`, extra);
      case 'limit_exceeded':
        throw new Problem(
          422,
          'limit-exceeded',
          `buyer ${state.buyerId} would exceed the per-buyer limit of ${state.sku}`,
          extra,
        );
      case 'unit_unavailable':
        throw soldOut(`that unit of ${state.sku} is taken`, outlook, now, extra);
      case 'product_not_found':
        throw new Problem(404, 'product-not-found', `no product with SKU ${state.sku}`, extra);
      default:
        // The hold step found nothing free: units may still be held by others and come back.
        throw soldOut(soldOutDetail(state.sku, outlook ?? { final: false }), outlook, now, extra);
    }
  }
  if (state.status === 'failed' && !state.checkoutUrl) {
    // Final for this key (its hold was released): the buyer starts again with a new key.
    const detail = `${state.reason ?? 'the purchase could not be started'}; try again with a new Idempotency-Key`;
    // `retryWithNewKey` says this key will not succeed; every 503 still carries Retry-After.
    throw unavailable(detail, { purchaseId: state.purchaseId, retryWithNewKey: true }, '5');
  }
  return { status: created ? 201 : 200, body: purchaseView(state) };
}

/** 202: the hold is taken, the checkout URL appears on GET /v1/purchases/:id once its session opens. */
export function waitingForCheckout(purchaseId: string, state: PurchaseState, queue: CheckoutQueueView): PlacedPurchase {
  const { purchaseId: id, status, holdExpiresAt, checkoutQueue } = purchaseView(state, queue);
  return {
    status: 202,
    location: `/v1/purchases/${purchaseId}`,
    retryAfter: queue.nextPollSeconds,
    body: { purchaseId: id, status, holdExpiresAt, checkoutQueue },
  };
}
