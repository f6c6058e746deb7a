import { ApplicationFailure, Context } from '@temporalio/activity';
import type { ProductTerms, PurchaseInput, PurchaseState, Rejection } from '../vocabulary';
import type { Clock } from '../store/clock';
import type { Db, Tx } from '../store/db';
import type { HoldDesk } from '../store/hold-desk';
import * as holds from '../store/holds';
import { getProduct, termsOf } from '../store/products';
import { claimAddress } from '../store/addresses';
import { claimCard, type CardClaim } from '../store/cards';
import * as payments from '../store/payments';
import * as rules from '../store/rules';
import type { RuleRefusal } from '../vocabulary/rules';
import * as purchases from '../store/purchases';
import { CHECKOUT_ATTEMPTS_ON_FAULTS, sessionExpiry } from './checkout-session';
import { createConfirmationSteps, createShippingSteps } from './confirmation';
import { createPaymentEvidenceSteps } from './payment-evidence';
import { createStrayGuard } from './stray-guard';
import { dispatchNotification, type Notifier } from './notifications';
import {
  createStripeSteps,
  type CheckoutSession,
  type OpenCheckoutInput,
  type RefundInput,
  type RefundState,
  type StripeStepDeps,
} from './stripe';

export type { CheckoutSession, OpenCheckoutInput, SessionState } from './stripe';

export interface ActivityDeps extends StripeStepDeps {
  db: Db;
  desk: HoldDesk;
  /** Postgres's clock (store/clock.ts): a hold lapses by it, so whether one has lapsed is asked of it. */
  clock: Clock;
  /**
   * Told once per Checkout Session opened for a purchase, with the seconds since the purchase was
   * placed (its wait in the checkout line included): the worker counts them, whatever the buyer was answered.
   */
  onSessionOpened?: (secondsSincePlaced: number) => void;
  /** Told once per stray refund refused (stray-guard.ts): the worker counts them. */
  onStrayRefundRefused?: () => void;
  /** Hands buyer notifications to their delivery workflows; without one they wait in the table. */
  notifier?: Notifier;
}

export type TakeHoldOutput =
  | {
      outcome: 'held';
      holdExpiresAt: string;
      holdSeconds: number;
      /** priceCents × quantity: what the buyer pays, computed here once. */
      amountCents: number;
      unitAmountCents: number;
      currency: string;
      productName: string;
      oversold: boolean;
      /** Where Checkout lets the buyer ship: the session collects the address (the product's `shippingCountries`). */
      shippingCountries?: string[];
      /** The payment methods Checkout may offer, where the purchase rules restrict them (store/rules/). */
      paymentMethodTypes?: string[];
    }
  | { outcome: 'rejected'; rejection: Rejection; heldBy?: string };

/**
 * The saga's side effects, built once per worker from long-lived clients: thin closures over the
 * store and Stripe. Each is idempotent: Postgres writes are guarded state transitions keyed by
 * purchase id, Stripe calls carry an idempotency key derived from the purchase id and the step.
 * Two kinds, from two task queues: the store's, on the saga's own queue, and Stripe's, every call to
 * Stripe, on the rate-limited Stripe queue (worker/create-worker.ts), so one budget paces them all.
 */
export function createActivities(deps: ActivityDeps) {
  return { ...createStoreActivities(deps), ...createStripeActivities(deps) };
}

/** Every activity that calls Stripe; only these run on the Stripe task queue, within its budget. */
export function createStripeActivities(deps: ActivityDeps) {
  const { db } = deps;
  const stripeSteps = createStripeSteps(deps);
  const strayGuard = createStrayGuard(deps);
  return {
    ...stripeSteps,
    ...createPaymentEvidenceSteps(deps),
    ...createShippingSteps(deps),

    /**
     * Refunds a payment in full (stripe.ts). A stray payment's money is refunded only once Stripe's
     * session and our records bear out that it is stray (stray-guard.ts); otherwise the step records
     * why and fails for good with `StrayRefundRefused`, refunding nothing.
     */
    async refundPayment(input: RefundInput): Promise<RefundState> {
      if (input.step === 'stray') await strayGuard.vet(input);
      return stripeSteps.refundPayment(input);
    },

    /**
     * Opens the Checkout Session (key `checkout-<purchaseId>`, see stripe.ts) and writes the record
     * in the same step: the purchase is `awaiting_payment` with its session and `record` once this
     * returns. Compensation: expireCheckout.
     */
    async openCheckout(
      input: OpenCheckoutInput & { record: { amountCents: number; currency: string; oversold: boolean } },
    ): Promise<CheckoutSession> {
      // Reached after the hold lapsed (its turn in the Stripe budget came too late, or a worker was
      // down): a session now would sell a unit that is no longer this buyer's. The saga gives it back.
      if (deps.clock.now() >= Date.parse(input.holdExpiresAt)) {
        throw ApplicationFailure.nonRetryable('the hold lapsed before the Checkout Session could open', 'HoldLapsed');
      }
      // The expiry is chosen by the first attempt and kept: a retry sends the same request, whenever it runs.
      const expiresAt = (await purchases.sessionExpiryOf(
        db,
        input.purchaseId,
        sessionExpiry(input.holdExpiresAt, deps.clock.now()),
      ))!;
      const session = await stripeSteps.openCheckout(input, expiresAt).catch((err: unknown) => {
        // A fault that is not a rate limit, again and again: Stripe is down; give the unit back.
        const { attempt } = Context.current().info;
        if (
          err instanceof ApplicationFailure &&
          err.type === 'StripeUnavailable' &&
          attempt >= CHECKOUT_ATTEMPTS_ON_FAULTS
        )
          throw ApplicationFailure.nonRetryable(
            `${err.message} (attempt ${attempt})`,
            'StripeUnavailable',
            ...(err.details ?? []),
          );
        throw err;
      });
      // Only over a purchase still opening (or this step's own earlier write): an attempt that
      // outlived its timeout must not reopen one the saga has already failed and compensated. The
      // write over `holding` is the session's opening, told once; a retry's rewrite is not.
      const patch = {
        ...input.record,
        status: 'awaiting_payment',
        sessionId: session.sessionId,
        checkoutUrl: session.url,
        holdExpiresAt: input.holdExpiresAt,
      } as const;
      const opened = await purchases.recordPurchase(db, input.purchaseId, patch, ['holding']);
      if (opened) deps.onSessionOpened?.(Math.max(0, deps.clock.now() - opened.createdAt.getTime()) / 1000);
      else await purchases.recordPurchase(db, input.purchaseId, patch, ['awaiting_payment']);
      return session;
    },

    /** See stripe.ts: the same request again, with the expiry an attempt chose; null when none ever did. */
    async closeUnansweredCheckout(input: OpenCheckoutInput) {
      const expiresAt = await purchases.sessionExpiryOf(db, input.purchaseId, 'peek');
      return expiresAt ? stripeSteps.closeUnansweredCheckout(input, expiresAt) : null;
    },
  };
}

/** Every activity that works on the store (Postgres) alone. */
export function createStoreActivities(deps: ActivityDeps) {
  const { db, desk } = deps;
  // A saga started without its terms (a retried request whose first start did not get through
  // carries none): read them once per SKU.
  const terms = new Map<string, ProductTerms>();
  const termsFor = async (input: PurchaseInput): Promise<ProductTerms | null> => {
    if (input.terms) return input.terms;
    const known = terms.get(input.sku);
    if (known) return known;
    const p = await getProduct(db, input.sku);
    if (p) terms.set(input.sku, termsOf(p));
    return p ? termsOf(p) : null;
  };
  const holdOf = (outcome: string, purchaseId: string) =>
    ApplicationFailure.nonRetryable(`no hold for ${purchaseId} (${outcome})`, 'HoldNotFound');

  const confirmation = createConfirmationSteps(deps);
  return {
    ...confirmation,

    /** Takes the stock hold through the hold desk (coalesced per SKU). Keyed by purchaseId; compensation: releaseHold. */
    async takeHold(input: PurchaseInput): Promise<TakeHoldOutput> {
      const result = await desk.take(input);
      if (result.outcome !== 'held') {
        return {
          outcome: 'rejected',
          rejection: result.outcome,
          ...(result.outcome === 'hold_exists' ? { heldBy: result.heldBy } : {}),
        };
      }
      const t = (await termsFor(input))!;
      const paymentMethodTypes = rules.checkoutPaymentMethods(t);
      return {
        outcome: 'held',
        holdExpiresAt: result.hold.expiresAt,
        holdSeconds: t.holdSeconds,
        amountCents: t.priceCents * input.quantity,
        unitAmountCents: t.priceCents,
        currency: t.currency,
        productName: t.name,
        oversold: result.hold.oversold > 0,
        ...(t.shippingCountries ? { shippingCountries: t.shippingCountries } : {}),
        ...(paymentMethodTypes ? { paymentMethodTypes } : {}),
      };
    },

    /** Returns the hold's units to stock, once (`active` → `released|expired`). The compensation of takeHold. */
    async releaseHold(
      purchaseId: string,
      reason: 'release' | 'expire',
      ending?: purchases.PurchasePatch,
    ): Promise<holds.ReleaseResult> {
      // With the purchase's ending: its record in the same transaction, one activity task, not two.
      const record =
        ending &&
        (async (tx: Tx) => {
          await purchases.recordPurchase(tx, purchaseId, ending);
        });
      return holds.releaseHold(db, purchaseId, reason, record);
    },

    /**
     * Keeps an active hold while a delayed payment settles, and marks the purchase settling (its
     * buyer leaves the waiting room); null when the hold already lapsed.
     */
    async extendHold(purchaseId: string, seconds: number): Promise<string | null> {
      return holds.holdWhileSettling(db, purchaseId, seconds);
    },

    /**
     * The hold becomes a sale, once, with the sale's record. `lapsed` when it already went back to
     * stock; `limit_exceeded` when the buyer's other sales of the SKU leave no room under `maxPerBuyer`.
     */
    async convertHold(
      purchaseId: string,
      sale: purchases.PurchasePatch,
      o: { notice?: boolean } = {},
    ): Promise<'sold' | 'lapsed' | 'limit_exceeded'> {
      // The sale's record in the same transaction: one activity task for a paid buyer, not two.
      const r = await holds.convertHold(db, purchaseId, async (tx) => {
        await purchases.recordPurchase(tx, purchaseId, sale);
      });
      if (r.outcome === 'not_found') throw holdOf(r.outcome, purchaseId);
      // `notice`: the buyer's confirmation notice too (a sale with no address to read first), once
      // per purchase however often the step is retried.
      if (r.outcome === 'sold' && o.notice) await confirmation.notifyConfirmed(purchaseId);
      return r.outcome;
    },

    /**
     * A late payment takes its units again with the conditional update, once; `sold_out` when none
     * are free, `limit_exceeded` when the buyer bought or holds its limit meanwhile.
     */
    async retakeForLatePayment(
      purchaseId: string,
    ): Promise<{ outcome: 'sold' | 'sold_out' | 'limit_exceeded'; oversold: boolean }> {
      const r = await holds.retakeForLatePayment(db, purchaseId);
      if (r.outcome === 'not_found') throw holdOf(r.outcome, purchaseId);
      return { outcome: r.outcome, oversold: r.outcome === 'sold' && r.hold.oversold > 0 };
    },

    /** Puts a refunded sale's units back on sale, once (`sold` → `restocked`). */
    async restockSale(purchaseId: string): Promise<boolean> {
      return (await holds.restockSale(db, purchaseId)).restocked;
    },

    /** Writes the saga's state to the purchase record that the API reads. */
    async recordPurchase(purchaseId: string, patch: purchases.PurchasePatch): Promise<void> {
      await purchases.recordPurchase(db, purchaseId, patch);
    },

    /**
     * Asks the purchase rules (store/rules/) whether a paid purchase's payment may stand, given what
     * Stripe showed of it (readPaymentEvidence): null, or the first refusal (kind and reason). Rules
     * that count claim the payment once, so a retried step answers the same.
     */
    async judgePayment(c: rules.RuleCase): Promise<RuleRefusal | null> {
      return rules.judgePayment(db, c);
    },

    /** Counts a paid purchase against its card's limit for the SKU, once (`card_claims`). Kept for histories before judgePayment. */
    async claimCard(c: {
      purchaseId: string;
      sku: string;
      fingerprint: string;
      quantity: number;
      maxPerCard: number;
    }): Promise<CardClaim> {
      return claimCard(db, c);
    },

    /** Counts a paid purchase against its shipping address's limit, once (`address_claims`). Kept for histories before judgePayment. */
    async claimAddress(c: {
      purchaseId: string;
      sku: string;
      addressKey: string;
      quantity: number;
      maxPerAddress: number;
    }): Promise<CardClaim> {
      return claimAddress(db, c);
    },

    /** Where the refund of a stray payment stands (`stray_payments`). */
    async recordStrayPayment(
      sessionId: string,
      patch: { status: payments.StrayStatus; refundId?: string; detail?: string },
    ): Promise<void> {
      await payments.updateStrayPayment(db, sessionId, patch);
    },

    async loadPurchase(purchaseId: string): Promise<PurchaseState | null> {
      return purchases.getPurchase(db, purchaseId);
    },

    /** Tells the buyer why: a notification (one per kind), delivered by its workflows. */
    async notifyBuyer(purchaseId: string, buyerId: string, kind: string, message: string): Promise<void> {
      const id = await purchases.notifyBuyer(db, purchaseId, buyerId, kind, message);
      // Idempotent: a retry finds the row, and the delivery workflows by their ids.
      if (deps.notifier) await dispatchNotification(db, deps.notifier, id);
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

export type StoreActivities = ReturnType<typeof createStoreActivities>;
export type StripeActivities = ReturnType<typeof createStripeActivities>;
export type Activities = StoreActivities & StripeActivities;
