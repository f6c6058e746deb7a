import { ApplicationFailure } from '@temporalio/activity';
import type Stripe from 'stripe';

// The saga's Stripe steps: Checkout Sessions and refunds, each with an idempotency key derived from
// the purchase id and the step, so a retried activity sends the same request and Stripe answers it once.

export interface OpenCheckoutInput {
  purchaseId: string;
  sku: string;
  buyerId: string;
  quantity: number;
  productName: string;
  unitAmountCents: number;
  currency: string;
  holdExpiresAt: string;
  holdSeconds: number;
  /** Where the buyer may ship (ISO codes): Checkout collects the address (`shipping_address_collection`). */
  shippingCountries?: string[];
}

export interface CheckoutSession {
  sessionId: string;
  url: string;
  sessionExpiresAt: string;
}

export interface SessionState {
  /** `expired` once no payment can happen any more; `complete` when the buyer paid (or a delayed payment is pending). */
  status: 'open' | 'complete' | 'expired';
  paymentStatus: string;
  paymentIntentId?: string;
  amountCents?: number;
  currency?: string;
}

export interface RefundInput {
  purchaseId: string;
  paymentIntentId: string;
  reason: string;
  /** Which path refunds: each refunds at most once (the idempotency key names it). */
  step: 'late' | 'support' | 'stray';
  /** A new refund after an earlier one failed: 1, 2, ... (part of the idempotency key). */
  attempt?: number;
  /** For a stray payment: the foreign session whose money goes back. */
  sessionId?: string;
}

export interface RefundState {
  refundId?: string;
  status: string;
  failureReason?: string;
}

export interface StripeStepDeps {
  stripe: Stripe;
  /** Where Stripe sends the buyer after paying or giving up; `{purchaseId}` is replaced. */
  successUrl: string;
  cancelUrl: string;
}

/** Stripe only accepts a Checkout Session expiry between 30 minutes and 24 hours after creation. */
const STRIPE_MIN_SESSION_SECONDS = 30 * 60;
/** Room for creating the session (and retrying it) a while after the hold was taken. */
const SESSION_MARGIN_SECONDS = 2 * 60;

/**
 * Maps a Stripe failure to Temporal's retry rules by status code, never by class name: network
 * errors, 409 (a concurrent request with the same key), 429 and 5xx are retried; other 4xx mean
 * Stripe will never accept this request and are non-retryable with type `StripeRejected`.
 */
export function classifyStripeError(err: unknown, what: string): Error {
  const e = err as { statusCode?: number; code?: string; message?: string };
  const status = e?.statusCode;
  const details = { status, code: e?.code };
  if (status && status >= 400 && status < 500 && status !== 409 && status !== 429) {
    return ApplicationFailure.nonRetryable(
      `${what}: Stripe answered ${status}: ${e.message}`,
      'StripeRejected',
      details,
    );
  }
  // Retryable: say which step and what Stripe answered, so the Temporal UI and `sagas stuck` show it.
  const answered = status ? `Stripe answered ${status}` : 'Stripe unreachable';
  return ApplicationFailure.retryable(`${what}: ${answered}: ${e?.message}`, 'StripeUnavailable', details);
}

function statusOf(err: unknown): number | undefined {
  return (err as { statusCode?: number })?.statusCode;
}

/** Runs one Stripe call, turning its failures into retryable or non-retryable activity failures. */
async function call<T>(what: string, fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    throw classifyStripeError(err, what);
  }
}

export function createStripeSteps({ stripe, successUrl, cancelUrl }: StripeStepDeps) {
  const readSession = async (sessionId: string): Promise<SessionState> => {
    const s = await call('reading the Checkout Session', () => stripe.checkout.sessions.retrieve(sessionId));
    const pi = typeof s.payment_intent === 'string' ? s.payment_intent : s.payment_intent?.id;
    return {
      status: (s.status ?? 'open') as SessionState['status'],
      paymentStatus: s.payment_status,
      paymentIntentId: pi ?? undefined,
      amountCents: s.amount_total ?? undefined,
      currency: s.currency ?? undefined,
    };
  };

  /** The session request of a purchase: derived only from the hold, so every call sends the same one. */
  const createSession = (input: OpenCheckoutInput) => {
    const holdEnd = Math.ceil(Date.parse(input.holdExpiresAt) / 1000);
    const holdStart = holdEnd - input.holdSeconds;
    const expiresAt = Math.max(holdEnd, holdStart + STRIPE_MIN_SESSION_SECONDS + SESSION_MARGIN_SECONDS);
    const fill = (url: string) => url.replace('{purchaseId}', encodeURIComponent(input.purchaseId));
    return stripe.checkout.sessions.create(
      {
        mode: 'payment',
        line_items: [
          {
            quantity: input.quantity,
            price_data: {
              currency: input.currency,
              unit_amount: input.unitAmountCents,
              product_data: { name: input.productName },
            },
          },
        ],
        success_url: fill(successUrl),
        cancel_url: fill(cancelUrl),
        expires_at: expiresAt,
        client_reference_id: input.purchaseId,
        metadata: { purchase_id: input.purchaseId, sku: input.sku, buyer_id: input.buyerId },
        payment_intent_data: { metadata: { purchase_id: input.purchaseId, sku: input.sku } },
        ...(input.shippingCountries?.length
          ? { shipping_address_collection: { allowed_countries: input.shippingCountries } }
          : {}),
      },
      { idempotencyKey: `checkout-${input.purchaseId}` },
    );
  };

  const expireCheckout = async (purchaseId: string, sessionId: string): Promise<SessionState> => {
    try {
      const s = await stripe.checkout.sessions.expire(sessionId, {}, { idempotencyKey: `expire-${purchaseId}` });
      return { status: 'expired', paymentStatus: s.payment_status };
    } catch (err) {
      if (statusOf(err) !== 400) throw classifyStripeError(err, 'expiring the Checkout Session');
    }
    return readSession(sessionId);
  };

  return {
    /**
     * Opens the Stripe Checkout Session. Idempotency key `checkout-<purchaseId>`; its parameters
     * are derived only from the hold, so a retry sends the same request. The session expires with
     * the hold, or at Stripe's 30-minute minimum for shorter holds (the workflow then expires it).
     * Compensation: expireCheckout.
     */
    async openCheckout(input: OpenCheckoutInput): Promise<CheckoutSession> {
      const session = await call('opening the Checkout Session', () => createSession(input));
      // A session without a URL cannot be paid, and asking again with the same key returns the same one.
      if (!session.url)
        throw ApplicationFailure.nonRetryable('Stripe returned a session without a URL', 'StripeRejected');
      return {
        sessionId: session.id,
        url: session.url,
        sessionExpiresAt: new Date(session.expires_at * 1000).toISOString(),
      };
    },

    /**
     * Expires the session so the buyer can no longer pay (key `expire-<purchaseId>`). Stripe
     * refuses when the session is not open any more; then its actual state is returned: `complete`
     * means a payment is on its way, which is not an error.
     */
    expireCheckout,

    /**
     * After the session step failed for good: an attempt whose answer was lost, or that outlived its
     * timeout, may still have opened the session at Stripe, payable until its `expires_at` for a
     * purchase that failed. Sending the same request under the same key again returns that session
     * (Stripe keeps a key's answer for 24 hours; one it never saw opens now), and it is expired. A
     * request Stripe refuses (its refusal replayed) opened nothing: null. `complete`: paid in between
     * (nobody was given its URL); the purchase never recorded the session, so that payment is
     * refunded as a stray one.
     */
    async closeUnansweredCheckout(input: OpenCheckoutInput): Promise<(SessionState & { sessionId: string }) | null> {
      let session: Stripe.Checkout.Session;
      try {
        session = await createSession(input);
      } catch (err) {
        const failure = classifyStripeError(err, 'finding the Checkout Session an attempt may have opened');
        if (failure instanceof ApplicationFailure && failure.type === 'StripeRejected') return null;
        throw failure;
      }
      const closed = session.status === 'open' ? await expireCheckout(input.purchaseId, session.id) : null;
      return {
        sessionId: session.id,
        ...(closed ?? {
          status: (session.status ?? 'expired') as SessionState['status'],
          paymentStatus: session.payment_status,
        }),
      };
    },

    /** The PaymentIntent a completed session was paid with. */
    async getSessionPayment(sessionId: string): Promise<SessionState> {
      return readSession(sessionId);
    },

    /**
     * Refunds a payment in full. Idempotency key `refund-<step>-<purchaseId>` (a stray payment: its
     * session id; a retry after a failed refund: `-<attempt>`), so each refund path refunds at most
     * once; a payment already refunded in full counts as done. The refund's metadata names the
     * purchase and the path, so its later events reach the saga that waits for it.
     */
    async refundPayment(input: RefundInput): Promise<RefundState> {
      const subject = input.step === 'stray' ? input.sessionId : input.purchaseId;
      const key = `refund-${input.step}-${subject}${input.attempt ? `-${input.attempt}` : ''}`;
      try {
        const refund = await stripe.refunds.create(
          {
            payment_intent: input.paymentIntentId,
            reason: 'requested_by_customer',
            metadata: {
              purchase_id: input.purchaseId,
              refund_step: input.step,
              ...(input.sessionId ? { session_id: input.sessionId } : {}),
              reason: input.reason.slice(0, 450),
            },
          },
          { idempotencyKey: key },
        );
        return refundState(refund);
      } catch (err) {
        if ((err as { code?: string })?.code === 'charge_already_refunded') return { status: 'succeeded' };
        throw classifyStripeError(err, 'refunding the payment');
      }
    },

    /** The fingerprint of the card that paid (Stripe's `payment_method_details.card.fingerprint`), or null. */
    async cardOfPayment(paymentIntentId: string): Promise<string | null> {
      const pi = await call('reading the payment', () =>
        stripe.paymentIntents.retrieve(paymentIntentId, { expand: ['latest_charge'] }),
      );
      const charge = typeof pi.latest_charge === 'object' ? pi.latest_charge : null;
      return charge?.payment_method_details?.card?.fingerprint ?? null;
    },

    /** Where a refund stands now (when its webhook is late). */
    async getRefund(refundId: string): Promise<RefundState> {
      return refundState(await call('reading the refund', () => stripe.refunds.retrieve(refundId)));
    },
  };
}

function refundState(refund: Stripe.Refund): RefundState {
  return {
    refundId: refund.id,
    status: refund.status ?? 'pending',
    ...(refund.failure_reason ? { failureReason: refund.failure_reason } : {}),
  };
}
