import { checkoutQueueOf } from '../store/checkout-line';
import type { PurchaseState } from '../vocabulary';
import type { Clock } from '../store/clock';
import type { Db } from '../store/db';
import { nextPollSeconds } from './next-poll';

// The line Checkout Sessions open in, at the Stripe budget's pace: the pace when the deps do not say
// (ApiDeps.checkoutsPerSecond), used by the purchase routes' slots (api/purchase-flow.ts) and a room's
// admissions before it measures its own (api/waiting-room.ts), and where a purchase stands in it.

/** A sandbox key's default Stripe budget (config/index.ts), for deps that do not say. */
export const DEFAULT_CHECKOUTS_PER_SECOND = 20;

/** A purchase whose Checkout Session waits for its turn in the Stripe budget (GET's `checkoutQueue`). */
export interface CheckoutQueueView {
  /** Purchases that wait ahead of it (of every product: the budget is the deployment's). */
  ahead: number;
  /** When its session should open: its slot in the budget's pace, or its place behind those still waiting. */
  estimatedWaitSeconds: number;
  /**
   * When to read the purchase again (also `Retry-After`): half the estimate (1 to 10 s), or its slot
   * when later, since its session cannot open before its saga starts there (api/next-poll.ts).
   */
  nextPollSeconds: number;
  holdExpiresAt?: string;
}

/** Where a `holding` purchase stands in the line for Checkout Sessions; undefined when it has no place in it. */
export async function checkoutQueueView(
  deps: { db: Db; clock: Clock; checkoutsPerSecond?: number },
  p: Pick<PurchaseState, 'purchaseId' | 'status'>,
): Promise<CheckoutQueueView | undefined> {
  if (p.status !== 'holding') return undefined;
  const place = await checkoutQueueOf(deps.db, p.purchaseId);
  if (!place) return undefined;
  const pace = deps.checkoutsPerSecond ?? DEFAULT_CHECKOUTS_PER_SECOND;
  const untilSlot = (Date.parse(place.checkoutAt) - deps.clock.now()) / 1000;
  const estimatedWaitSeconds = Math.max(1, Math.ceil(Math.max(untilSlot, (place.ahead + 1) / pace)));
  return {
    ahead: place.ahead,
    estimatedWaitSeconds,
    nextPollSeconds: nextPollSeconds(estimatedWaitSeconds, untilSlot),
    ...(place.holdExpiresAt ? { holdExpiresAt: place.holdExpiresAt } : {}),
  };
}
