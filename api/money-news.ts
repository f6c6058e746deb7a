import { deliverRefundNews, tellOrRefundAgain } from '../client/refunds';
import { withTx, type Tx } from '../store/db';
import { recordDispute } from '../store/disputes';
import { failStrayRefundLate, findPurchaseByPaymentIntent, recordRefundNews } from '../store/payments';
import { appendAudit, getPurchase, recordPurchase, type PurchaseRecord } from '../store/purchases';
import { DISPUTE_ACTOR, isRefundable } from '../vocabulary';
import type { ApiDeps } from './deps';
import type { MoneyNews } from './stripe-events';

const OUTSIDE = 'refunded outside the service (Stripe Dashboard)';

/**
 * What happened to a purchase's money after the payment, on its record: a refund's status (and the
 * saga that made it is told), a refund made in the Dashboard, a dispute. Returns whether the event
 * concerned one of our purchases.
 */
export async function recordMoneyNews(deps: ApiDeps, news: MoneyNews): Promise<'recorded' | 'ignored'> {
  if (news.kind === 'refund' && news.step === 'stray') {
    // The refund of a stray payment: its own saga follows it; the purchase it named is not touched.
    const told = await deliverRefundNews(
      deps.temporal,
      { step: 'stray', purchaseId: news.purchaseId ?? '', sessionId: news.sessionId },
      news,
    );
    if (news.status === 'failed' && news.sessionId) {
      // Its saga follows a refund only until it succeeds, and may be finishing, or have ended: the
      // payer's money is back with us, in front of support either way.
      const what = told ? 'the refund failed' : 'the refund failed after its saga ended';
      const reason = news.failureReason ?? 'no reason given';
      if (await failStrayRefundLate(deps.db, news.sessionId, news.refundId, `${what}: ${reason}`)) {
        deps.logger.warn({ sessionId: news.sessionId, refundId: news.refundId }, `a stray payment's ${what}`);
      }
    }
    return 'recorded';
  }
  const purchase = await purchaseOf(deps, news);
  if (!purchase) return 'ignored';
  const { purchaseId } = purchase;
  switch (news.kind) {
    case 'refund': {
      // Named by its metadata only, with no payment of the purchase on record to bear it out: the saga
      // that may have made it (before writing the payment) is told, and takes only its own refund's
      // news. Nothing is written: a refund of another payment of the account naming this purchase
      // would otherwise put a refund on it, and its own payment would then be ignored as settled.
      if (news.paymentIntentId === undefined || purchase.paymentIntentId !== news.paymentIntentId) {
        if (news.step) await deliverRefundNews(deps.temporal, { step: news.step, purchaseId }, news);
        return 'recorded';
      }
      // Written only when it is news of the purchase's own refund that moves it forward: not of a
      // refund it replaced (made again, or settled by hand), and never back from settled.
      const current = await recordRefundNews(deps.db, purchaseId, {
        refundId: news.refundId,
        status: news.status,
        failureReason: news.failureReason,
        reason: news.step ? undefined : OUTSIDE,
      });
      if (!current && news.status === 'succeeded' && purchase.refund?.status === 'settled') {
        // The Stripe refund a settlement by hand replaced went through after all: the buyer may have
        // been refunded twice. The settlement stands on the record; support is told in the audit trail.
        await appendAudit(deps.db, purchaseId, 'stripe', 'refund_succeeded_after_settlement', {
          refundId: news.refundId,
          amountCents: news.amountCents,
        });
        deps.logger.warn(
          { purchaseId, refundId: news.refundId },
          'a Stripe refund succeeded after its purchase was settled by hand',
        );
      }
      if (!news.step) return 'recorded';
      const told = await deliverRefundNews(deps.temporal, { step: news.step, purchaseId }, news);
      // A saga follows its refund until it succeeds: one that failed after that (its saga finishing,
      // or ended), or whose saga has ended, goes in front of support. (A saga still following it
      // records the failure itself, and waits for support's word.)
      const afterSuccess = purchase.refund?.status === 'succeeded' && purchase.refund.refundId === news.refundId;
      if (current && news.status === 'failed' && (!told || afterSuccess)) {
        const after = told ? 'it succeeded' : 'its saga ended';
        await recordPurchase(deps.db, purchaseId, {
          status: 'needs_attention',
          reason: `the refund failed after ${after}: ${news.failureReason ?? 'no reason given'}`,
        });
      }
      return 'recorded';
    }
    case 'charge_refunded':
      // In full, and not by one of our refunds (whose saga records its own outcome).
      if (news.fully && isRefundable(purchase.status) && (!purchase.refund || purchase.refund.reason === OUTSIDE)) {
        await recordPurchase(deps.db, purchaseId, {
          status: 'refunded',
          reason: OUTSIDE,
          refund: { status: 'succeeded', reason: OUTSIDE },
        });
        await appendAudit(deps.db, purchaseId, 'stripe', 'refunded_outside', {});
      }
      return 'recorded';
    case 'dispute': {
      const { disputeId, status, reason, dueBy } = news;
      // The status, its audit row and what a closing calls for, in one transaction: a word to a saga
      // that fails (Temporal unreachable) rolls the status back, and Stripe's retry of the event acts.
      // The row stays locked meanwhile, so two deliveries at once act once (one whose transaction
      // fails after its word went out sends it again with the retry: a saga takes the word twice as once).
      await withTx(deps.db, async (tx) => {
        const recorded = await recordDispute(tx, purchaseId, {
          disputeId,
          status,
          reason,
          ...(dueBy ? { dueBy } : {}),
        });
        if (!recorded) return;
        await appendAudit(tx, purchaseId, 'stripe', 'dispute', { disputeId, status });
        if (!recorded.moved || (status !== 'lost' && status !== 'won')) return;
        // Once per closing (Stripe sends a won dispute's news twice: closed, funds reinstated), decided
        // from the record as it is under the row's lock, not as it was read before.
        const now = (await getPurchase(tx, purchaseId)) ?? purchase;
        if (status === 'lost') await settleRefundByLostDispute(deps, tx, now, disputeId);
        else await retryRefundAfterWonDispute(deps, tx, now, disputeId);
      });
      return 'recorded';
    }
  }
}

/**
 * A lost dispute gave the buyer's money back through the bank (the chargeback): a refund of ours still
 * owed (refused while the dispute was open, failed, or pending) is settled by it, and its saga stops
 * trying one Stripe will never make (a refund that failed after its saga ended gets a run that records
 * it). The purchase ends `refunded`, `refund.status: settled`, the reason naming the dispute.
 */
async function settleRefundByLostDispute(
  deps: ApiDeps,
  tx: Tx,
  purchase: PurchaseRecord,
  disputeId: string,
): Promise<void> {
  // Only a refund: whatever else a saga may wait for (a session's expire) a chargeback does not settle.
  if (!owesRefund(purchase)) return;
  const note = `settled by the dispute ${disputeId}, lost: the money went back to the buyer through the chargeback`;
  const told = await tellOrRefundAgain({ temporal: deps.temporal, taskQueue: deps.taskQueue }, purchase, {
    action: 'settled',
    actor: DISPUTE_ACTOR,
    note,
  });
  await appendAudit(tx, purchase.purchaseId, 'stripe', 'refund_settled_by_dispute', { disputeId, told });
}

/**
 * A won dispute gave the money back to the merchant, and Stripe takes a refund of the charge again: a
 * refund of ours still owed (refused while the dispute was open) is tried again now, not at its saga's
 * next backoff (up to an hour) or support's retry. A refund that failed after its saga ended gets a run
 * that makes it again.
 */
async function retryRefundAfterWonDispute(
  deps: ApiDeps,
  tx: Tx,
  purchase: PurchaseRecord,
  disputeId: string,
): Promise<void> {
  if (purchase.status !== 'needs_attention' || !owesRefund(purchase)) return;
  const told = await tellOrRefundAgain({ temporal: deps.temporal, taskQueue: deps.taskQueue }, purchase, {
    action: 'retry',
    actor: DISPUTE_ACTOR,
  });
  await appendAudit(tx, purchase.purchaseId, 'stripe', 'refund_retried_after_dispute', { disputeId, told });
}

/** A refund was asked for and has not gone through (pending, refused or failed). */
function owesRefund(purchase: PurchaseRecord): boolean {
  return purchase.refund !== undefined && !['succeeded', 'settled'].includes(purchase.refund.status);
}

/**
 * The purchase the news is of: the one whose payment it concerns. A refund's metadata names one, but
 * only a refund of that purchase's own payment is its news (metadata can be set on any refund of the
 * account, so a refund of another payment naming ours must not touch it).
 */
async function purchaseOf(deps: ApiDeps, news: MoneyNews): Promise<PurchaseRecord | null> {
  if (news.kind === 'refund' && news.purchaseId) {
    const named = await getPurchase(deps.db, news.purchaseId);
    // One whose payment is not on its record yet (a late refund's news can arrive before the saga
    // writes it) is taken at its word: it has no payment a retry could refund.
    if (named && (!named.paymentIntentId || named.paymentIntentId === news.paymentIntentId)) return named;
  }
  return news.paymentIntentId ? findPurchaseByPaymentIntent(deps.db, news.paymentIntentId) : null;
}
