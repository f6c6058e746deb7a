import type { Db } from '../store/db';
import { hasShipping, noteConfirmation, recordShipping } from '../store/confirmation';
import { formatMoney } from '../web/money';
import { receiptTime } from '../web/time';
import { dispatchNotification, type Notifier } from './notifications';
import { stripeCaller, type StripeStepDeps } from './stripe';

// The steps of a purchase's confirmation (issue 32): where it ships, kept on the record (never in
// the saga's history) from the purchase's own webhook, or read from Stripe when no event brought it, and the buyer's confirmation notice, written once per
// purchase and handed to its delivery workflows like every buyer notification.

type ConfirmationDeps = Pick<StripeStepDeps, 'stripe' | 'onStripeCall' | 'successUrl'> & {
  db: Db;
  notifier?: Notifier;
};

/** The Stripe step, on the Stripe queue within the budget: a read, no idempotency key needed. */
export function createShippingSteps({ db, stripe, onStripeCall }: ConfirmationDeps) {
  const { guarded } = stripeCaller(onStripeCall);
  return {
    /**
     * Keeps on the purchase the name and address Checkout collected on its session (the purchase
     * page and the confirmation notice show them); false when the session collected none. Usually the
     * purchase's webhook already kept them (api/routes/webhooks.ts): then no call to Stripe. Writes
     * the same row on a retry; nothing to compensate.
     */
    async recordShippingAddress(purchaseId: string, sessionId: string): Promise<boolean> {
      if (await hasShipping(db, purchaseId)) return true;
      const session = await guarded('checkout.sessions.retrieve', 'reading the shipping address', () =>
        stripe.checkout.sessions.retrieve(sessionId),
      );
      const details = session.collected_information?.shipping_details;
      if (!details?.address) return false;
      await recordShipping(db, purchaseId, {
        ...(details.name ? { name: details.name } : {}),
        address: details.address,
      });
      return true;
    },
  };
}

/**
 * The receipt's address in the confirmation notice: Checkout's success URL for `purchaseId`, without
 * the `result=paid` the default one carries (it tells the purchase page the buyer has just paid; a
 * link kept in a message says nothing of the kind).
 */
export function receiptAddress(successUrl: string, purchaseId: string): string {
  const filled = successUrl.replaceAll('{purchaseId}', encodeURIComponent(purchaseId));
  const url = new URL(filled);
  if (url.searchParams.get('result') !== 'paid') return filled;
  url.searchParams.delete('result');
  return url.toString();
}

/** The store step, on the saga's own queue. */
export function createConfirmationSteps({ db, notifier, successUrl }: ConfirmationDeps) {
  return {
    /**
     * Tells the buyer their purchase is confirmed: notification `confirmed`, one per purchase (the
     * table's key: a retried step, a replayed saga or a second confirming path finds the first and
     * sends nothing more), with the order, its amount, when and where it ships, and the receipt's
     * address (the purchase page, Checkout's success URL). Nothing for a purchase not confirmed.
     */
    async notifyConfirmed(purchaseId: string): Promise<void> {
      const id = await noteConfirmation(db, purchaseId, receiptAddress(successUrl, purchaseId), {
        money: formatMoney,
        time: receiptTime,
      });
      if (id && notifier) await dispatchNotification(db, notifier, id);
    },
  };
}
