import { condition, isCancellation, log, patched, upsertSearchAttributes } from '@temporalio/workflow';
import {
  canMove,
  foreignEventReason,
  paidBy,
  type PaymentEvent,
  type PurchaseInput,
  type PurchaseState,
  type PurchaseStatus,
} from '../vocabulary';
import type { SessionState } from '../activities';
import { attended, SupportDesk, type Attended } from './attended';
import { HoldExpiresAtKey, PurchaseStatusKey } from './definitions';
import { PaymentFold, type Payment } from './payment-fold';
import { acts, stripeActs } from './proxies';
import { refundPaid } from './saga-refund';
import { limitsBefore12, PAYMENT_RULES_PATCH } from './rules-before-1-2';
import { paymentRulesApply } from '../vocabulary/rules';
import { DURATIONS } from './durations';

/**
 * The marker of sagas that tell their buyer the purchase is confirmed (issue 32): present in a
 * history, the confirmation read where the purchase ships and wrote the notice. Sagas confirmed
 * before it replay without those two steps.
 */
export const CONFIRMATION_NOTICE_PATCH = 'confirmation-notice';

/**
 * The marker of sagas that end in fewer Temporal actions (issue 34): the hold's release and how the
 * purchase ended in one activity, the sale and the buyer's confirmation notice in one when no
 * address is read from Stripe between them, and the endings of `UNPUBLISHED_ENDINGS` left off the
 * search attributes when the run ends with them. Sagas from before it replay their steps.
 */
export const ONE_STEP_ENDINGS_PATCH = 'one-step-endings';

/**
 * Endings a run that ends with them does not publish as its `PurchaseStatus`: nothing looks a closed
 * run up by them (`sagas stuck` and the operators' filters ask for running sagas; the outcome is the
 * run's result and the purchase's record), and each would cost an action and a visibility write.
 * `failed`, `refunded` and `needs_attention` are published; `rejected` too by sagas from before
 * PUBLISH_CHANGES_PATCH.
 */
const UNPUBLISHED_ENDINGS: readonly PurchaseStatus[] = ['confirmed', 'late_confirmed', 'expired', 'payment_failed'];

/**
 * The marker of sagas that publish only what changes (issue 34): a status published again with the
 * same hold expiry (a declined card keeps the purchase `awaiting_payment`) is not upserted again, and
 * a hold refused at once (`rejected`, the run's only step) is left unpublished like the endings of
 * `UNPUBLISHED_ENDINGS`. Each upsert left off is a billed action and a visibility write. Sagas from
 * before it replay their upserts.
 */
export const PUBLISH_CHANGES_PATCH = 'publish-changes-only';

/**
 * The marker of sagas whose support settlement is the step's alone at every step Stripe refused (a
 * read of the paid session or of the payment, a refund), not only at the session's expire: a read
 * settled by hand used to settle the refund that followed it too, with none made. Sagas from before
 * it replay with the settlement carried on.
 */
export const SETTLEMENT_EVERY_STEP_PATCH = 'settlement-is-every-steps-own';

/**
 * The state of one purchase saga and the steps that settle it once the hold is taken. Shared by the
 * first run (purchase.ts) and the follow-up run (follow-up.ts). Every step writes the record before
 * the in-memory state, so whatever the API reads from a query or update is already durable.
 */
export class PurchaseSaga {
  readonly state: PurchaseState;
  readonly fold = new PaymentFold();
  /** Support's retries and by-hand settlements, and refunds' news. */
  readonly desk = new SupportDesk().listen();
  cancelRequested = false;
  /** The refund the saga made of a payment it could not keep, once it started: an operator's cancel finishes it. */
  refunding?: { reason: string; kind: string };
  /** The hold step has answered (held or refused): the API's first wait (holdAnsweredUpdate) is over. */
  holdAnswered = false;
  /**
   * The latest moment the payment can have been made, once it is known to be paid: the end of the
   * whole second of Stripe's event time (events carry whole seconds), or when the saga learned it.
   */
  paidAt?: number;
  /** Support settled the read of the paid session by hand (learnPaymentIntent reads it no more). */
  private intentReadSettled = false;
  /** What this run last upserted as its search attributes (status and hold expiry), if anything. */
  private published?: string;
  /**
   * A follow-up run's payment events wait until its record is loaded: only then does it know its
   * session, and so which events are its own.
   */
  private waitsForRecord: boolean;
  private readonly unheard: PaymentEvent[] = [];

  constructor(readonly input: PurchaseInput) {
    this.state = {
      purchaseId: input.purchaseId,
      sku: input.sku,
      buyerId: input.buyerId,
      quantity: input.quantity,
      status: 'holding',
    };
    this.waitsForRecord = input.followUp === true;
  }

  /**
   * A payment event, into the fold unless it is another purchase's. The webhook refuses those already;
   * one that reaches the saga some other way is ignored too, once the saga knows its session (before,
   * the session step's answer may come after the webhook's news of it).
   */
  hear(e: PaymentEvent): void {
    if (this.waitsForRecord) return void this.unheard.push(e);
    if (this.state.sessionId && foreignEventReason(e, this.state, e.livemode ?? false)) return;
    const wasPaid = this.fold.payment === 'paid';
    if (!this.fold.apply(e)) return;
    if (e.paymentIntentId) this.state.paymentIntentId = e.paymentIntentId;
    if (!wasPaid && this.fold.payment === 'paid') this.paidAt = paidBy(e) ?? Date.now();
  }

  /** A follow-up run loaded its record: the events that waited for it are heard now, in order. */
  recordLoaded(): void {
    this.waitsForRecord = false;
    for (const e of this.unheard.splice(0)) this.hear(e);
  }

  get payment(): Payment {
    return this.fold.payment;
  }

  async setStatus(status: PurchaseStatus, patch: Partial<PurchaseState>, o: { runEnds?: boolean } = {}): Promise<void> {
    // The record first: once the state says so (and an update or query answers with it), the API can read it.
    await acts.recordPurchase(this.state.purchaseId, { ...patch, status });
    this.markStatus(status, patch, o);
  }

  /** Gives the hold back (`releaseAs`) and records how the purchase ended: one activity (ONE_STEP_ENDINGS_PATCH). */
  async endReleased(
    releaseAs: 'release' | 'expire',
    status: PurchaseStatus,
    patch: Partial<PurchaseState>,
  ): Promise<void> {
    /* istanbul ignore else -- only the replay of a history from before the patch takes the other path */
    if (patched(ONE_STEP_ENDINGS_PATCH)) {
      await acts.releaseHold(this.input.purchaseId, releaseAs, { ...patch, status });
      this.markStatus(status, patch, { runEnds: this.nothingLeftToSettle(status) });
    } else {
      await acts.releaseHold(this.input.purchaseId, releaseAs);
      await this.setStatus(status, patch);
    }
  }

  /**
   * No payment can change the purchase once it has `status`: none made, none on its way (or the one
   * on its way failed as the purchase ends `payment_failed`). Its run ends there (settleStragglers).
   */
  nothingLeftToSettle(status = this.state.status): boolean {
    if (this.payment === 'paid') return false;
    return this.payment !== 'pending' || status === 'payment_failed';
  }

  /**
   * The state and search attributes only, for a step whose activity already wrote the record.
   * `runEnds`: the run ends with this status, which then stays unpublished if it is one of
   * UNPUBLISHED_ENDINGS (only under ONE_STEP_ENDINGS_PATCH), or `rejected` (PUBLISH_CHANGES_PATCH).
   * What this run published already is not upserted again (PUBLISH_CHANGES_PATCH).
   */
  markStatus(status: PurchaseStatus, patch: Partial<PurchaseState>, o: { runEnds?: boolean } = {}): void {
    // Not a command: logged once when it happens, not again on replay.
    const from = this.state.status;
    if (status !== from) log.info('purchase status changed', { purchaseId: this.state.purchaseId, from, to: status });
    // The table of moves is what operators and the docs rely on: a move outside it is a bug to see.
    /* istanbul ignore if -- a bug's trace: the fast tier fails when any of its sagas logs it (test/fast/helpers/temporal.ts) */
    if (!canMove(from, status)) log.error('purchase status moved outside PURCHASE_TRANSITIONS', { from, to: status });
    Object.assign(this.state, patch, { status });
    if (o.runEnds && UNPUBLISHED_ENDINGS.includes(status)) return;
    if (o.runEnds && status === 'rejected' && patched(PUBLISH_CHANGES_PATCH)) return;
    const { holdExpiresAt } = this.state;
    const publication = `${status} ${holdExpiresAt}`;
    if (publication === this.published && patched(PUBLISH_CHANGES_PATCH)) return;
    this.published = publication;
    upsertSearchAttributes([
      { key: PurchaseStatusKey, value: status },
      ...(holdExpiresAt
        ? [{ key: HoldExpiresAtKey, value: new Date(holdExpiresAt) }]
        : /* istanbul ignore next -- only a refused hold published before the patch has no expiry (its replay) */ []),
    ]);
  }

  /**
   * Runs a Stripe step that must happen: a refusal moves the purchase to `needs_attention` and is tried
   * again. `settleEndsCall`: support's settlement also ends the call while it is being retried (a step
   * that is safe to abandon mid-call: the session's expire).
   */
  async attend<T>(
    what: string,
    call: () => Promise<T>,
    interrupt?: () => boolean,
    settleEndsCall = false,
  ): Promise<Attended<T>> {
    const answer = await attended(what, call, {
      desk: this.desk,
      interrupt,
      settleEndsCall,
      flag: (reason) => this.setStatus('needs_attention', { reason }),
    });
    // A settlement is this step's, or none's: one that came as the step ended another way (its retry
    // went through) is not carried to the next step Stripe refuses, which waits for a word of its own.
    if (this.desk.settled && patched(SETTLEMENT_EVERY_STEP_PATCH)) this.desk.settled = undefined;
    return answer;
  }

  /** The PaymentIntent that paid the session, from Stripe when no event named it. */
  async learnPaymentIntent(): Promise<void> {
    const { state } = this;
    if (state.paymentIntentId || !state.sessionId) return;
    // Settled by hand once: support told the saga to go on without it, and is not asked again.
    if (this.intentReadSettled) return;
    const sessionId = state.sessionId;
    const read = await this.attend('reading the paid session', () => stripeActs().getSessionPayment(sessionId));
    if (read.outcome === 'done') state.paymentIntentId = read.value.paymentIntentId;
    // Under the patch only: before it the settlement stayed on the desk, and answered the next read.
    if (read.outcome === 'settled' && patched(SETTLEMENT_EVERY_STEP_PATCH)) this.intentReadSettled = true;
  }

  private buyerLimitReason(): string {
    return `limit per buyer: this buyer already bought or holds the most of ${this.input.sku} one buyer may`;
  }

  /**
   * The purchase rules' verdict on the payment (store/rules/, through one activity): null when it may
   * stand, else why it goes back and the buyer's notification kind. What paid and where it ships is
   * read from Stripe once, and only for a product with a rule that reads the payment.
   */
  private async overLimit(): Promise<{ reason: string; kind: string } | null> {
    const { terms } = this.input;
    if (!terms || !paymentRulesApply(terms)) return null;
    // A saga that reached this point before the rules read the payment once replays the reads and
    // claims it made then (rules-before-1-2.ts).
    if (!patched(PAYMENT_RULES_PATCH)) return limitsBefore12(this);
    const sessionId = this.state.sessionId;
    /* istanbul ignore if -- a payment is known only once its session is: the saga always has it here */
    if (!sessionId) return null;
    const read = await this.attend('reading the payment', () => stripeActs().readPaymentEvidence(sessionId));
    if (read.outcome !== 'done') return null;
    const evidence = read.value;
    if (!this.state.paymentIntentId && evidence.paymentIntentId) this.state.paymentIntentId = evidence.paymentIntentId;
    const { purchaseId, sku, quantity } = this.input;
    return acts.judgePayment({ purchaseId, sku, quantity, terms, evidence });
  }

  /** A paid session whose hold is gone: re-take a unit, or refund at once and tell the buyer why. */
  async settleLatePayment(): Promise<void> {
    const { state } = this;
    await this.learnPaymentIntent();
    const over = await this.overLimit();
    if (over) return refundPaid(this, over.reason, over.kind);
    const retake = await acts.retakeForLatePayment(state.purchaseId);
    if (retake.outcome === 'sold') {
      // Paid in time, but its unit went back to stock before the news arrived: still a sale in time.
      const inTime = this.paidInTime();
      await this.setStatus(inTime ? 'confirmed' : 'late_confirmed', {
        paymentIntentId: state.paymentIntentId,
        oversold: retake.oversold,
        reason: inTime
          ? 'paid in time; its unit had gone back to stock before the payment was confirmed, and another was taken'
          : 'paid after the hold lapsed; a unit was still free',
      });
      return this.announceSale();
    }
    // The activity gave back a hold still active; the payment is refunded.
    if (retake.outcome === 'limit_exceeded') return refundPaid(this, this.buyerLimitReason(), 'refunded_buyer_limit');
    return refundPaid(
      this,
      'sold out: the hold had lapsed and no unit was left when the payment was confirmed',
      'refunded_sold_out',
    );
  }

  /** Paid before the hold ended (a payment whose time is not known yet: now). One rule for every path. */
  private paidInTime(): boolean {
    const end = this.state.holdExpiresAt;
    return end === undefined || (this.paidAt ?? Date.now()) <= Date.parse(end);
  }

  /** Paid, and the hold may still be ours: the hold becomes the sale, else a late payment is settled. */
  async confirmPaid(): Promise<void> {
    const over = await this.overLimit();
    if (over) {
      await acts.releaseHold(this.input.purchaseId, 'release');
      return refundPaid(this, over.reason, over.kind);
    }
    // Paid after the hold's end (while Stripe's expire was failing, say) and the unit was still ours: a late sale.
    const late = !this.paidInTime();
    const status = late ? 'late_confirmed' : 'confirmed';
    const sale = {
      paymentIntentId: this.state.paymentIntentId,
      reason: late ? 'paid after the hold lapsed; its unit was still held' : 'paid in time',
    };
    // convertHold writes the sale's record in its own transaction, and the buyer's notice when no
    // address is read first: one activity for a paid buyer.
    const notice = !this.readsAddress() && patched(ONE_STEP_ENDINGS_PATCH);
    const withNotice: [] | [{ notice: true }] = notice ? [{ notice }] : [];
    const converted = await acts.convertHold(this.input.purchaseId, { ...sale, status }, ...withNotice);
    if (converted === 'sold') {
      // With the notice sent, nothing follows the sale: the run ends.
      this.markStatus(status, sale, { runEnds: notice });
      return notice ? undefined : this.announceSale();
    }
    // A late payment of another purchase of this buyer was re-taken while this hold was taken: the
    // activity gave the hold back, and the payment is refunded.
    if (converted === 'limit_exceeded') return refundPaid(this, this.buyerLimitReason(), 'refunded_buyer_limit');
    // The hold went back to stock a moment before (its expiry passed and a taker reclaimed it).
    await this.settleLatePayment();
  }

  /**
   * Tells the buyer the purchase is confirmed, once per purchase (the notice's row is keyed by the
   * purchase and its kind: a retried step or a second confirming path writes nothing more), after
   * keeping where it ships (read from Stripe: a product that ships, or one whose terms the saga was
   * not given). A refused read costs the notice its address, not the notice.
   */
  private async announceSale(): Promise<void> {
    if (!patched(CONFIRMATION_NOTICE_PATCH)) return;
    const { purchaseId, sessionId } = this.state;
    if (sessionId && this.readsAddress()) {
      try {
        await stripeActs().recordShippingAddress(purchaseId, sessionId);
      } catch (err) {
        if (isCancellation(err)) throw err;
        log.warn('could not read where the purchase ships', { purchaseId, error: (err as Error).message });
      }
    }
    await acts.notifyConfirmed(purchaseId);
  }

  /** Where the purchase ships is read before the notice: a product that ships, or one whose terms the saga was not given. */
  private readsAddress(): boolean {
    const terms = this.input.terms;
    return this.state.sessionId !== undefined && (!terms || (terms.shippingCountries?.length ?? 0) > 0);
  }

  /**
   * Stripe's word on a delayed payment no event settled within its wait (its webhook may have been
   * lost): paid on this purchase's own session, the saga takes it as paid.
   */
  async readDelayedPayment(): Promise<void> {
    const sessionId = this.state.sessionId;
    /* istanbul ignore if -- a payment is known only once its session is: the saga always has it here */
    if (!sessionId) return;
    const read = await this.attend('reading the session of the delayed payment', () =>
      stripeActs().getSessionPayment(sessionId),
    );
    if (read.outcome === 'done' && this.ownSession(read.value) && read.value.paymentStatus === 'paid') {
      this.fold.payment = 'paid';
      if (read.value.paymentIntentId) this.state.paymentIntentId = read.value.paymentIntentId;
    }
  }

  /**
   * readDelayedPayment for a purchase that had already ended (its unit gone back): a read Stripe
   * refused flagged it `needs_attention` for support; unless it found the payment, the purchase is
   * put back as it ended, so nothing waits for support once the run closes.
   */
  async readAfterTheEnd(): Promise<void> {
    const { status, reason } = this.state;
    await this.readDelayedPayment();
    if (this.payment !== 'paid' && this.state.status !== status) await this.setStatus(status, { reason });
  }

  /**
   * A delayed payment was completed in time: keep the unit until it settles (or fails, or never does).
   * `released`: it failed or never settled, and the unit went back.
   */
  async holdUntilSettled(): Promise<'confirmed' | 'released'> {
    // Held a margin past the wait: the read of Stripe's session at its end is made on a hold still ours.
    const holdMs = DURATIONS.asyncSettleMs + DURATIONS.settleReadMarginMs;
    const until = await acts.extendHold(this.input.purchaseId, holdMs / 1000);
    await this.setStatus('awaiting_payment', {
      reason: 'a delayed payment is settling; the unit stays held',
      ...(until ? { holdExpiresAt: until } : {}),
    });
    const settled = await condition(() => this.fold.settled, DURATIONS.asyncSettleMs);
    // The webhook may have been lost: Stripe's word decides before the buyer's unit is given back.
    if (!settled) await this.readDelayedPayment();
    if (this.payment === 'paid') {
      await this.confirmPaid();
      return 'confirmed';
    }
    await this.endReleased('release', 'payment_failed', {
      reason: settled ? 'the delayed payment failed' : 'the delayed payment never settled',
    });
    return 'released';
  }

  /** A session read from Stripe still carries this order's amount and currency (or says nothing of them). */
  private ownSession(s: SessionState): boolean {
    const { amountCents, currency } = this.state;
    if (s.amountCents !== undefined && amountCents !== undefined && s.amountCents !== amountCents) return false;
    return !(s.currency && currency && s.currency.toLowerCase() !== currency.toLowerCase());
  }
}
