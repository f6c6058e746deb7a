import { ApplicationFailure } from '@temporalio/activity';
import type Stripe from 'stripe';
import type { PurchaseState, Rejection } from '../workflows/definitions';
import type { Db } from './db';
import { HoldDesk } from './hold-desk';
import * as inventory from './inventory';
import * as purchases from './purchases';

export interface ActivityDeps {
  db: Db;
  stripe: Stripe;
  desk: HoldDesk;
  /** Where Stripe sends the buyer after paying or giving up; `{purchaseId}` is replaced. */
  successUrl: string;
  cancelUrl: string;
}

export interface TakeHoldInput {
  purchaseId: string;
  sku: string;
  buyerId: string;
  quantity: number;
  unitId?: string;
}

export type TakeHoldOutput =
  | {
      outcome: 'held';
      holdExpiresAt: string;
      holdSeconds: number;
      amountCents: number;
      currency: string;
      productName: string;
      oversold: boolean;
    }
  | { outcome: 'rejected'; rejection: Rejection };

export interface OpenCheckoutInput {
  purchaseId: string;
  sku: string;
  buyerId: string;
  quantity: number;
  productName: string;
  amountCents: number;
  currency: string;
  holdExpiresAt: string;
  holdSeconds: number;
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
  const e = err as { statusCode?: number; code?: string; message?: string; type?: string };
  const status = e?.statusCode;
  if (status && status >= 400 && status < 500 && status !== 409 && status !== 429) {
    return ApplicationFailure.nonRetryable(`${what}: Stripe answered ${status}: ${e.message}`, 'StripeRejected', {
      status,
      code: e.code,
    });
  }
  // Retryable: say which step and what Stripe answered, so the Temporal UI and `sagas stuck` show it.
  return ApplicationFailure.retryable(
    `${what}: ${status ? `Stripe answered ${status}` : 'Stripe unreachable'}: ${e?.message}`,
    'StripeUnavailable',
    {
      status,
      code: e?.code,
    },
  );
}

function statusOf(err: unknown): number | undefined {
  return (err as { statusCode?: number })?.statusCode;
}

/**
 * The saga's side effects, built once per worker from long-lived clients. Each is idempotent:
 * Postgres writes are guarded state transitions keyed by purchase id, Stripe calls carry an
 * idempotency key derived from the purchase id and the step.
 */
export function createActivities(deps: ActivityDeps) {
  const { db, stripe, desk } = deps;
  // Name, price, currency and hold length never change after a product is created: look them up once.
  const products = new Map<string, inventory.Product>();
  const productOf = async (sku: string): Promise<inventory.Product> => {
    let p = products.get(sku);
    if (!p) {
      p = (await inventory.getProduct(db, sku))!;
      products.set(sku, p);
    }
    return p;
  };
  const readSession = async (sessionId: string): Promise<SessionState> => {
    try {
      const s = await stripe.checkout.sessions.retrieve(sessionId);
      const pi = typeof s.payment_intent === 'string' ? s.payment_intent : s.payment_intent?.id;
      return {
        status: (s.status ?? 'open') as SessionState['status'],
        paymentStatus: s.payment_status,
        paymentIntentId: pi ?? undefined,
      };
    } catch (err) {
      throw classifyStripeError(err, 'reading the Checkout Session');
    }
  };

  return {
    /** Takes the stock hold through the hold desk (coalesced per SKU). Keyed by purchaseId; compensation: releaseHold. */
    async takeHold(input: TakeHoldInput): Promise<TakeHoldOutput> {
      const result = await desk.take(input);
      if (result.outcome !== 'held') return { outcome: 'rejected', rejection: result.outcome };
      const product = await productOf(input.sku);
      return {
        outcome: 'held',
        holdExpiresAt: result.hold.expiresAt,
        holdSeconds: product.holdSeconds,
        amountCents: product.priceCents * input.quantity,
        currency: product.currency,
        productName: product.name,
        oversold: result.hold.oversold > 0,
      };
    },

    /** Returns the hold's units to stock, once (`active` → `released|expired`). The compensation of takeHold. */
    async releaseHold(purchaseId: string, reason: 'release' | 'expire'): Promise<inventory.ReleaseResult> {
      return inventory.releaseHold(db, purchaseId, reason);
    },

    /** Keeps an active hold while a delayed payment settles; null when it already lapsed. */
    async extendHold(purchaseId: string, seconds: number): Promise<string | null> {
      return inventory.extendHold(db, purchaseId, seconds);
    },

    /** The hold becomes a sale, once. `lapsed` when it already went back to stock. */
    async convertHold(purchaseId: string): Promise<'sold' | 'lapsed'> {
      const r = await inventory.convertHold(db, purchaseId);
      if (r.outcome === 'not_found') throw ApplicationFailure.nonRetryable(`no hold for ${purchaseId}`, 'HoldNotFound');
      return r.outcome;
    },

    /** A late payment takes its units again with the conditional update, once; `sold_out` when none are free. */
    async retakeForLatePayment(purchaseId: string): Promise<{ outcome: 'sold' | 'sold_out'; oversold: boolean }> {
      const r = await inventory.retakeForLatePayment(db, purchaseId);
      if (r.outcome === 'not_found') throw ApplicationFailure.nonRetryable(`no hold for ${purchaseId}`, 'HoldNotFound');
      return r.outcome === 'sold'
        ? { outcome: 'sold', oversold: r.hold.oversold > 0 }
        : { outcome: 'sold_out', oversold: false };
    },

    /** Puts a refunded sale's units back on sale, once (`sold` → `restocked`). */
    async restockSale(purchaseId: string): Promise<boolean> {
      return (await inventory.restockSale(db, purchaseId)).restocked;
    },

    /**
     * Opens the Stripe Checkout Session. Idempotency key `checkout-<purchaseId>`; its parameters
     * are derived only from the hold, so a retry sends the same request. The session expires with
     * the hold, or at Stripe's 30-minute minimum for shorter holds (the workflow then expires it).
     * Compensation: expireCheckout.
     */
    async openCheckout(input: OpenCheckoutInput): Promise<CheckoutSession> {
      const holdEnd = Math.ceil(Date.parse(input.holdExpiresAt) / 1000);
      const holdStart = holdEnd - input.holdSeconds;
      const expiresAt = Math.max(holdEnd, holdStart + STRIPE_MIN_SESSION_SECONDS + SESSION_MARGIN_SECONDS);
      const fill = (url: string) => url.replace('{purchaseId}', encodeURIComponent(input.purchaseId));
      try {
        const session = await stripe.checkout.sessions.create(
          {
            mode: 'payment',
            line_items: [
              {
                quantity: input.quantity,
                price_data: {
                  currency: input.currency,
                  unit_amount: Math.round(input.amountCents / input.quantity),
                  product_data: { name: input.productName },
                },
              },
            ],
            success_url: fill(deps.successUrl),
            cancel_url: fill(deps.cancelUrl),
            expires_at: expiresAt,
            client_reference_id: input.purchaseId,
            metadata: { purchase_id: input.purchaseId, sku: input.sku, buyer_id: input.buyerId },
            payment_intent_data: { metadata: { purchase_id: input.purchaseId, sku: input.sku } },
          },
          { idempotencyKey: `checkout-${input.purchaseId}` },
        );
        if (!session.url)
          throw ApplicationFailure.nonRetryable('Stripe returned a session without a URL', 'StripeRejected');
        return {
          sessionId: session.id,
          url: session.url,
          sessionExpiresAt: new Date(session.expires_at * 1000).toISOString(),
        };
      } catch (err) {
        throw classifyStripeError(err, 'opening the Checkout Session');
      }
    },

    /**
     * Expires the session so the buyer can no longer pay (key `expire-<purchaseId>`). Stripe
     * refuses when the session is not open any more; then its actual state is returned: `complete`
     * means a payment is on its way, which is not an error.
     */
    async expireCheckout(purchaseId: string, sessionId: string): Promise<SessionState> {
      try {
        const s = await stripe.checkout.sessions.expire(sessionId, {}, { idempotencyKey: `expire-${purchaseId}` });
        return { status: 'expired', paymentStatus: s.payment_status };
      } catch (err) {
        if (statusOf(err) !== 400) throw classifyStripeError(err, 'expiring the Checkout Session');
      }
      return readSession(sessionId);
    },

    /** The PaymentIntent a completed session was paid with. */
    async getSessionPayment(sessionId: string): Promise<SessionState> {
      return readSession(sessionId);
    },

    /**
     * Refunds a payment in full. Idempotency key `refund-<step>-<purchaseId>`, so each refund path
     * refunds at most once; a payment already refunded in full counts as done.
     */
    async refundPayment(input: {
      purchaseId: string;
      paymentIntentId: string;
      reason: string;
      step: 'late' | 'support';
    }): Promise<{ refundId?: string; status: string }> {
      try {
        const refund = await stripe.refunds.create(
          {
            payment_intent: input.paymentIntentId,
            reason: 'requested_by_customer',
            metadata: { purchase_id: input.purchaseId, reason: input.reason.slice(0, 450) },
          },
          { idempotencyKey: `refund-${input.step}-${input.purchaseId}` },
        );
        return { refundId: refund.id, status: refund.status ?? 'pending' };
      } catch (err) {
        if ((err as { code?: string })?.code === 'charge_already_refunded') return { status: 'succeeded' };
        throw classifyStripeError(err, 'refunding the payment');
      }
    },

    /** Writes the saga's state to the purchase record that the API reads. */
    async recordPurchase(purchaseId: string, patch: purchases.PurchasePatch): Promise<void> {
      await purchases.recordPurchase(db, purchaseId, patch);
    },

    async loadPurchase(purchaseId: string): Promise<PurchaseState | null> {
      return purchases.getPurchase(db, purchaseId);
    },

    /** Tells the buyer why (outbox row, one per kind). */
    async notifyBuyer(purchaseId: string, buyerId: string, kind: string, message: string): Promise<void> {
      await purchases.notifyBuyer(db, purchaseId, buyerId, kind, message);
    },

    async appendAudit(
      purchaseId: string,
      actor: string,
      action: string,
      detail: Record<string, unknown>,
    ): Promise<void> {
      await purchases.appendAudit(db, purchaseId, actor, action, detail);
    },
  };
}

export type Activities = ReturnType<typeof createActivities>;
