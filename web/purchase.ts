import type { PurchaseStatus } from '../vocabulary';
import { html, type Html } from './html';
import { layout } from './layout';
import { formatMoney } from './money';
import type { Viewer } from './catalogue';

// GET /purchases/:id: where Checkout sends the buyer back, and where they look later. The outcome
// in words; a purchase still under way (the webhook races the buyer's return) refreshes itself.

/** A purchase as its buyer sees it (the shape of GET /v1/purchases/:id, plus the product's name). */
export interface PurchaseModel {
  purchaseId: string;
  sku: string;
  productName?: string;
  quantity: number;
  status: Exclude<PurchaseStatus, 'rejected'>;
  holdExpiresAt: string | null;
  checkoutUrl?: string;
  amountCents: number | null;
  currency: string | null;
  reason?: string;
  refund?: { status: string; reason: string };
  /** The unit is held and the checkout waits for its turn (GET /v1/purchases/:id's `checkoutQueue`). */
  checkoutQueue?: { ahead: number; estimatedWaitSeconds: number };
}

/** How often a page still waiting for news reloads itself, in seconds. */
export const PENDING_REFRESH_SECONDS = 2;

interface Outcome {
  heading: string;
  /** good, bad or wait: the colour of the notice. */
  tone: 'good' | 'bad' | 'wait';
  words: Html;
  pending: boolean;
}

const when = (iso: string | null) =>
  iso ? html`<time datetime="${iso}">${new Date(iso).toUTCString()}</time>` : html`the end of the hold`;

function outcomeOf(p: PurchaseModel, left: boolean): Outcome {
  switch (p.status) {
    case 'holding': {
      const q = p.checkoutQueue;
      if (!q) {
        return {
          heading: 'Reserving your item',
          tone: 'wait',
          words: html`Your item is being reserved and the checkout prepared. This page updates by itself.`,
          pending: true,
        };
      }
      const ahead =
        q.ahead === 0 ? 'You are next' : `${q.ahead} ${q.ahead === 1 ? 'buyer is' : 'buyers are'} ahead of you`;
      return {
        heading: 'Preparing your checkout',
        tone: 'wait',
        words: html`${
          p.holdExpiresAt
            ? html`Your item is reserved for you until ${when(p.holdExpiresAt)}.`
            : html`Your purchase is in line: your item is reserved when its turn comes.`
        }
        Checkouts open one after the other at the pace our payment provider allows: ${ahead}, about
        ${q.estimatedWaitSeconds} s. This page updates by itself and takes you on to pay.`,
        pending: true,
      };
    }
    case 'awaiting_payment': {
      const pay = p.checkoutUrl ? html` <a href="${p.checkoutUrl}" id="pay">Go to the checkout</a>.` : html``;
      const declined = p.reason?.includes('declined')
        ? html` Your last payment attempt was declined: you may try again, or use another card.`
        : html``;
      const lead = left
        ? html`You left the checkout without paying.`
        : html`We are still waiting for the payment. If you have just paid, it is being confirmed: this page updates by
          itself.`;
      return {
        heading: 'Waiting for the payment',
        tone: 'wait',
        words: html`${lead}${declined} Your item stays reserved until ${when(p.holdExpiresAt)}.${pay}`,
        pending: true,
      };
    }
    case 'confirmed':
      return {
        heading: 'Your purchase is confirmed',
        tone: 'good',
        words: html`Your purchase is confirmed. Thank you!`,
        pending: false,
      };
    case 'late_confirmed':
      return {
        heading: 'Your purchase is confirmed',
        tone: 'good',
        words: html`Your purchase is confirmed. Thank you! Your payment arrived after your reservation had ended
        (${when(p.holdExpiresAt)}), but the item was still there, so it is yours.`,
        pending: false,
      };
    case 'expired':
      return {
        heading: 'Your reservation expired',
        tone: 'bad',
        words:
          p.reason === 'cancelled by the buyer'
            ? html`You cancelled this purchase; nothing was charged.`
            : html`Your reservation expired before the payment arrived; nothing was charged and the item went back on
              sale.`,
        pending: false,
      };
    case 'payment_failed':
      return {
        heading: 'The payment failed',
        tone: 'bad',
        words: html`The payment failed (${p.reason ?? 'no reason was given'}); nothing was charged and the item went
        back on sale.`,
        pending: false,
      };
    case 'refunded':
      return {
        heading: 'Refunded',
        tone: 'bad',
        words: html`Your payment was refunded in full. Why: ${p.refund?.reason ?? p.reason ?? 'no reason was recorded'}.`,
        pending: false,
      };
    case 'failed':
      return {
        heading: 'The purchase could not be completed',
        tone: 'bad',
        words: html`The purchase could not be completed (${p.reason ?? 'no reason was given'}); nothing was charged.`,
        pending: false,
      };
    case 'needs_attention':
      return {
        heading: 'Your purchase needs attention',
        tone: 'wait',
        words: html`Your payment arrived but could not be settled automatically. Our support team has been told and will
        sort it out: you will not be charged twice, and are refunded if the purchase cannot go through.`,
        pending: false,
      };
  }
}

function refundLine(p: PurchaseModel): Html {
  if (!p.refund || p.status === 'refunded') return html``;
  const state =
    p.refund.status === 'succeeded'
      ? 'has been made'
      : p.refund.status === 'failed'
        ? 'failed; support will make it by hand'
        : 'is on its way';
  return html`<p id="refund">A refund ${state}. Why: ${p.refund.reason}.</p>`;
}

/**
 * `payNext`: the buyer pressed Buy and was sent here while the checkout was being prepared: once it
 * is ready, the page takes them on to it (they did not leave it: they never saw it).
 */
export function purchasePage(p: PurchaseModel, viewer: Viewer, o: { left: boolean; payNext?: boolean }): string {
  const out = outcomeOf(p, o.left);
  const onToPay = o.payNext && !o.left && p.status === 'awaiting_payment' && p.checkoutUrl;
  const amount = p.amountCents !== null && p.currency ? html`, ${formatMoney(p.amountCents, p.currency)}` : html``;
  const product = p.productName ?? p.sku;
  const main = html`<h1>${out.heading}</h1>
    <p class="notice ${out.tone}" id="outcome" data-status="${p.status}" role="status">${out.words}</p>
    ${refundLine(p)}
    <p>
      ${p.quantity} × <a href="/p/${encodeURIComponent(p.sku)}">${product}</a>${amount}. Purchase
      <code id="purchase">${p.purchaseId}</code>.
    </p>`;
  return layout({
    title: out.heading,
    main,
    ...viewer,
    ...(onToPay
      ? { refreshSeconds: 1, refreshTo: p.checkoutUrl }
      : out.pending
        ? { refreshSeconds: PENDING_REFRESH_SECONDS }
        : {}),
  });
}
