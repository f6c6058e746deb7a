import { ApplicationFailure, Context } from '@temporalio/activity';
import type Stripe from 'stripe';
import type { StripeEndpoint, StripeOutcome } from '../vocabulary';
import { sessionRequest, type OpenCheckoutInput } from './checkout-session';

export type { OpenCheckoutInput } from './checkout-session';

// The saga's Stripe steps: Checkout Sessions and refunds, each with an idempotency key derived from
// the purchase id and the step, so a retried activity sends the same request and Stripe answers it once.

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
  /**
   * The refund this one makes again, having failed after its saga ended (part of the idempotency
   * key): each failed refund is made again at most once, however often support asks.
   */
  replaces?: string;
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
  /** Told of every call to Stripe and how it went (the worker counts them: flashsale_stripe_requests_total). */
  onStripeCall?: (endpoint: StripeEndpoint, outcome: StripeOutcome) => void;
}

/** The most keys after the first a keyed step tries (each one spent by a 5xx Stripe keeps). */
export const KEY_CHAIN_MAX = 8;

/** Backoff of a call Stripe refused with 429: full jitter over 1 s, 2 s, 4 s … up to 20 s. */
const RATE_LIMIT_BACKOFF = { baseMs: 1_000, capMs: 20_000, floorMs: 250 };

/** How long to wait before the next attempt after the `attempt`th was rate limited (jittered, so callers spread). */
export function rateLimitDelayMs(attempt: number, random: () => number = Math.random): number {
  const ceiling = Math.min(RATE_LIMIT_BACKOFF.capMs, RATE_LIMIT_BACKOFF.baseMs * 2 ** Math.max(0, attempt - 1));
  return Math.max(RATE_LIMIT_BACKOFF.floorMs, Math.round(random() * ceiling));
}

/**
 * Maps a Stripe failure to Temporal's retry rules by status code, never by class name: network
 * errors, 409 (a concurrent request with the same key), 429 and 5xx are retried; other 4xx mean
 * Stripe will never accept this request and are non-retryable with type `StripeRejected`. A 429 is
 * `StripeRateLimited`, retried after a jittered backoff of its own (`attempt`: the activity's), so
 * the callers Stripe turned away do not all come back in the same instant.
 */
export function classifyStripeError(err: unknown, what: string, attempt = 1): Error {
  const e = err as { statusCode?: number; code?: string; message?: string };
  const status = e?.statusCode;
  const details = { status, code: e?.code };
  if (status === 429) {
    return ApplicationFailure.create({
      message: `${what}: Stripe answered 429 (rate limited): ${e.message}`,
      type: 'StripeRateLimited',
      details: [details],
      nextRetryDelay: rateLimitDelayMs(attempt),
    });
  }
  if (status && status >= 400 && status < 500 && status !== 409) {
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

/**
 * Whether Stripe keeps this 5xx under the request's Idempotency-Key: it replays a key's first answer,
 * a 500 included, for 24 hours (`Idempotent-Replayed: true` on the replay, `Stripe-Should-Retry:
 * false`), so the same key can never succeed again.
 */
function keySpent(err: unknown): boolean {
  const status = statusOf(err);
  const headers = (err as { headers?: Record<string, string | undefined> })?.headers ?? {};
  return Boolean(status && status >= 500) && headers['idempotent-replayed'] === 'true';
}

/** How a Stripe call went, for the request counter. */
function outcomeOf(err: unknown): StripeOutcome {
  const status = statusOf(err);
  if (status === 429) return 'rate_limited';
  if (status && status >= 400 && status < 500) return 'refused';
  return 'failed';
}

/** The current activity attempt, or 1 outside an activity (the contract test calls the steps directly). */
function currentAttempt(): number {
  try {
    return Context.current().info.attempt;
  } catch {
    return 1;
  }
}

/**
 * How every Stripe step calls Stripe: `call` counts the call (onStripeCall) and rethrows Stripe's
 * error; `failure` maps one to a retryable or non-retryable activity failure; `guarded` does both.
 */
export function stripeCaller(onStripeCall?: StripeStepDeps['onStripeCall']) {
  const call = async <T>(endpoint: StripeEndpoint, fn: () => Promise<T>): Promise<T> => {
    try {
      const result = await fn();
      onStripeCall?.(endpoint, 'ok');
      return result;
    } catch (err) {
      onStripeCall?.(endpoint, outcomeOf(err));
      throw err;
    }
  };
  const failure = (err: unknown, what: string) => classifyStripeError(err, what, currentAttempt());
  /**
   * A keyed request, along its purchase's one chain of keys: `key`, then `<key>-r1`, `<key>-r2`, …
   * It moves to the next key only when Stripe replays a 5xx it keeps for this one (that key can never
   * succeed); an answer lost, a 409 or a fresh 5xx stay on their key, so the next attempt walks the
   * same chain and meets that request's own answer again (the session the buyer may already have
   * been given, the refund already made). Every attempt and the close step find the same object.
   */
  const keyed = async <T>(endpoint: StripeEndpoint, key: string, fn: (key: string) => Promise<T>): Promise<T> => {
    for (let n = 0; ; n++) {
      try {
        return await call(endpoint, () => fn(n === 0 ? key : `${key}-r${n}`));
      } catch (err) {
        if (!keySpent(err) || n >= KEY_CHAIN_MAX) throw err;
      }
    }
  };
  const guarded = async <T>(endpoint: StripeEndpoint, what: string, fn: () => Promise<T>): Promise<T> => {
    try {
      return await call(endpoint, fn);
    } catch (err) {
      throw failure(err, what);
    }
  };
  return { call, failure, guarded, keyed };
}

export function createStripeSteps({ stripe, successUrl, cancelUrl, onStripeCall }: StripeStepDeps) {
  const { failure, guarded, keyed } = stripeCaller(onStripeCall);

  const readSession = async (sessionId: string): Promise<SessionState> => {
    const s = await guarded('checkout.sessions.retrieve', 'reading the Checkout Session', () =>
      stripe.checkout.sessions.retrieve(sessionId),
    );
    const pi = typeof s.payment_intent === 'string' ? s.payment_intent : s.payment_intent?.id;
    return {
      status: (s.status ?? 'open') as SessionState['status'],
      paymentStatus: s.payment_status,
      paymentIntentId: pi ?? undefined,
      amountCents: s.amount_total ?? undefined,
      currency: s.currency ?? undefined,
    };
  };

  /** The session request of a purchase, under its key: every call with the same expiry sends the same one. */
  const sessionKey = (input: OpenCheckoutInput) => `checkout-${input.purchaseId}`;
  const createSession = (input: OpenCheckoutInput, expiresAt: Date, idempotencyKey: string) =>
    stripe.checkout.sessions.create(sessionRequest(input, expiresAt, { successUrl, cancelUrl }), { idempotencyKey });

  const expireCheckout = async (purchaseId: string, sessionId: string): Promise<SessionState> => {
    try {
      const s = await keyed('checkout.sessions.expire', `expire-${purchaseId}`, (idempotencyKey) =>
        stripe.checkout.sessions.expire(sessionId, {}, { idempotencyKey }),
      );
      return { status: 'expired', paymentStatus: s.payment_status };
    } catch (err) {
      if (statusOf(err) !== 400) throw failure(err, 'expiring the Checkout Session');
    }
    // Not open any more (rare: paid or expired a moment ago): a second call within this step's budget.
    return readSession(sessionId);
  };

  return {
    /**
     * Opens the Stripe Checkout Session, expiring at `expiresAt` (sessionExpiry, chosen once per
     * purchase). Idempotency key `checkout-<purchaseId>`: with the same expiry every attempt sends the
     * same request. Compensation: expireCheckout.
     */
    async openCheckout(input: OpenCheckoutInput, expiresAt: Date): Promise<CheckoutSession> {
      let session: Stripe.Checkout.Session;
      try {
        session = await keyed('checkout.sessions.create', sessionKey(input), (key) =>
          createSession(input, expiresAt, key),
        );
      } catch (err) {
        throw failure(err, 'opening the Checkout Session');
      }
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
     * purchase that failed. Sending the same request (the expiry the first attempt chose) under the
     * same key again returns that session (Stripe keeps a key's answer for 24 hours; one it never saw
     * opens now), and it is expired. A request Stripe refuses (its refusal replayed) opened nothing:
     * null. `complete`: paid in between (nobody was given its URL); the purchase never recorded the
     * session, so that payment is refunded as a stray one. It walks the same chain of keys as the
     * attempts (past each key spent by a 5xx Stripe keeps), so it finds the last attempt's session.
     */
    async closeUnansweredCheckout(
      input: OpenCheckoutInput,
      expiresAt: Date,
    ): Promise<(SessionState & { sessionId: string }) | null> {
      let session: Stripe.Checkout.Session;
      try {
        session = await keyed('checkout.sessions.create', sessionKey(input), (key) =>
          createSession(input, expiresAt, key),
        );
      } catch (err) {
        const refusal = failure(err, 'finding the Checkout Session an attempt may have opened');
        if (refusal instanceof ApplicationFailure && refusal.type === 'StripeRejected') return null;
        throw refusal;
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
     * session id; a refund made again after one failed once its saga ended: `-after-<refundId>`; a
     * retry after a refused or failed refund: `-<attempt>`), so each refund path refunds at most
     * once; a payment already refunded in full counts as done. The refund's metadata names the
     * purchase and the path, so its later events reach the saga that waits for it.
     */
    async refundPayment(input: RefundInput): Promise<RefundState> {
      const subject = input.step === 'stray' ? input.sessionId : input.purchaseId;
      const again = input.replaces ? `-after-${input.replaces}` : '';
      const key = `refund-${input.step}-${subject}${again}${input.attempt ? `-${input.attempt}` : ''}`;
      try {
        const refund = await keyed('refunds.create', key, (idempotencyKey) =>
          stripe.refunds.create(
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
            { idempotencyKey },
          ),
        );
        return refundState(refund);
      } catch (err) {
        if ((err as { code?: string })?.code === 'charge_already_refunded') return { status: 'succeeded' };
        throw failure(err, 'refunding the payment');
      }
    },

    /** The fingerprint of the card that paid (Stripe's `payment_method_details.card.fingerprint`), or null. */
    async cardOfPayment(paymentIntentId: string): Promise<string | null> {
      const pi = await guarded('payment_intents.retrieve', 'reading the payment', () =>
        stripe.paymentIntents.retrieve(paymentIntentId, { expand: ['latest_charge'] }),
      );
      const charge = typeof pi.latest_charge === 'object' ? pi.latest_charge : null;
      return charge?.payment_method_details?.card?.fingerprint ?? null;
    },

    /** Where a refund stands now (when its webhook is late). */
    async getRefund(refundId: string): Promise<RefundState> {
      return refundState(
        await guarded('refunds.retrieve', 'reading the refund', () => stripe.refunds.retrieve(refundId)),
      );
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
