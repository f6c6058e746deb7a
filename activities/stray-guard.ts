import { ApplicationFailure, Context } from '@temporalio/activity';
import type Stripe from 'stripe';
import type { Db } from '../store/db';
import { findPaymentOwner, refuseStrayPayment, type RecordedOwner } from '../store/payments';
import { STRAY_REFUND_REFUSED } from '../vocabulary';
import { stripeCaller, type RefundInput, type StripeStepDeps } from './stripe';

// The stray-payment saga is started by a webhook event, and a correctly signed event is only as
// trustworthy as the webhook secret: one naming a confirmed sale's session while claiming another
// buyer's purchase had that sale's payment refunded. So the refund is decided from the session as
// Stripe returns it (with its PaymentIntent) and from our records, never from the event's body.

/** The session the stray-payment saga is about, as Stripe returns it. */
export interface StraySessionAtStripe {
  sessionId: string;
  /** False when Stripe answered 404: there is no such session. */
  found: boolean;
  /** Its `metadata.purchase_id`: the purchase it names by Stripe's word. */
  purchaseId?: string;
  paymentIntentId?: string;
  paymentStatus?: string;
  paymentIntentStatus?: string;
  amountCents?: number;
  currency?: string;
}

/**
 * Why the money on this session must not be refunded as stray, or null when it may. It may only
 * when no purchase records the session as its Checkout Session nor either payment (Stripe's, the
 * event's) as its own, and Stripe's session names the purchase the event claimed and was paid with
 * the payment the event named. Money of a purchase's own session is settled by that purchase's saga
 * (a sale, or a late payment's refund); only support refunds a sale.
 */
export function strayRefusal(
  claim: { claimedPurchase: string; paymentIntentId?: string },
  atStripe: StraySessionAtStripe,
  owner: RecordedOwner | null,
): string | null {
  const s = atStripe.sessionId;
  if (owner) {
    const whose =
      owner.sessionId === s
        ? `session ${s} is the Checkout Session of purchase ${owner.purchaseId} (${owner.status})`
        : `payment ${owner.paymentIntentId} is the payment of purchase ${owner.purchaseId} (${owner.status})`;
    return `${whose}, whose own saga settles that money`;
  }
  if (!atStripe.found) return `Stripe has no session ${s}`;
  if (!atStripe.purchaseId) {
    return `Stripe's session ${s} names no purchase of ours (the event named ${claim.claimedPurchase})`;
  }
  if (atStripe.purchaseId !== claim.claimedPurchase) {
    return `Stripe's session ${s} names purchase ${atStripe.purchaseId}, not ${claim.claimedPurchase} as the event said`;
  }
  if (!atStripe.paymentIntentId) return `Stripe's session ${s} has no payment`;
  if (claim.paymentIntentId && claim.paymentIntentId !== atStripe.paymentIntentId) {
    return `the event named payment ${claim.paymentIntentId}, but Stripe's session ${s} was paid with ${atStripe.paymentIntentId}`;
  }
  return null;
}

export interface StrayGuardDeps extends Pick<StripeStepDeps, 'stripe' | 'onStripeCall'> {
  db: Db;
  /** Told once per refused stray refund (the worker counts them: flashsale_stray_refunds_refused_total). */
  onStrayRefundRefused?: () => void;
}

export function createStrayGuard(deps: StrayGuardDeps) {
  const { call, failure } = stripeCaller(deps.onStripeCall);

  const read = async (sessionId: string): Promise<StraySessionAtStripe> => {
    let s: Stripe.Checkout.Session;
    try {
      // One call for both: the session and, expanded, its PaymentIntent.
      s = await call('checkout.sessions.retrieve', () =>
        deps.stripe.checkout.sessions.retrieve(sessionId, { expand: ['payment_intent'] }),
      );
    } catch (err) {
      if ((err as { statusCode?: number })?.statusCode === 404) return { sessionId, found: false };
      throw failure(err, 'reading the stray session');
    }
    const pi = s.payment_intent;
    const intent = typeof pi === 'object' && pi !== null ? pi : undefined;
    return {
      sessionId,
      found: true,
      purchaseId: s.metadata?.purchase_id || undefined,
      paymentIntentId: (typeof pi === 'string' ? pi : intent?.id) ?? undefined,
      paymentStatus: s.payment_status,
      ...(intent ? { paymentIntentStatus: intent.status } : {}),
      amountCents: intent?.amount ?? s.amount_total ?? undefined,
      currency: intent?.currency ?? s.currency ?? undefined,
    };
  };

  return {
    /**
     * Returns when the refund of this stray payment may be made; otherwise records why (the stray
     * payment `refused`, an audit row on each purchase concerned), logs it, counts it once, and
     * throws a non-retryable `StrayRefundRefused`: nothing is refunded.
     */
    async vet(input: RefundInput): Promise<void> {
      const sessionId = input.sessionId;
      if (!sessionId)
        throw ApplicationFailure.nonRetryable('a stray refund that names no session', STRAY_REFUND_REFUSED);
      const atStripe = await read(sessionId);
      const payments = [atStripe.paymentIntentId, input.paymentIntentId].filter((p): p is string => !!p);
      const owner = await findPaymentOwner(deps.db, sessionId, [...new Set(payments)]);
      const why = strayRefusal(
        { claimedPurchase: input.purchaseId, paymentIntentId: input.paymentIntentId },
        atStripe,
        owner,
      );
      if (!why) return;
      const detail = `not refunded, no money moved: ${why}`;
      const facts = {
        claimedPurchase: input.purchaseId,
        eventPaymentIntentId: input.paymentIntentId ?? null,
        stripe: atStripe,
        ...(owner ? { owner } : {}),
      };
      const first = await refuseStrayPayment(deps.db, sessionId, {
        detail,
        paymentIntentId: atStripe.paymentIntentId,
        owner: owner?.purchaseId,
        facts,
      });
      if (first) deps.onStrayRefundRefused?.();
      Context.current().log.warn('stray refund refused: the event is not borne out by Stripe or our records', facts);
      throw ApplicationFailure.nonRetryable(detail, STRAY_REFUND_REFUSED, { sessionId, owner: owner?.purchaseId });
    },
  };
}
