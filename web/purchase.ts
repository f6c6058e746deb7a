import type { PurchaseStatus } from '../vocabulary';
import { html, type Html } from './html';
import { layout } from './layout';
import type { Live } from './live';
import { formatMoney, formatWait } from './money';
import type { Viewer } from './catalogue';
import { countdown, receiptTime, utcClock } from './time';

// GET /purchases/:id: where Checkout sends the buyer back, and where they look later. The outcome
// in words; a purchase still under way (the webhook races the buyer's return) keeps itself up to
// date: in place with JavaScript (polling this path's JSON, backing off), by reloading without. A
// delayed payment that is settling (a bank debit: days) is a state of its own, with nothing to pay
// and no quick reload.

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
  /** A delayed payment (a bank debit) was made at this time and is settling (GET's `settlingSince`). */
  settlingSince?: string;
  /** When it was confirmed (GET's `confirmedAt`). */
  confirmedAt?: string;
  /** Where it ships, line by line as a label reads (GET's `shipping`, store/confirmation.ts). */
  shippingLines?: string[];
}

/** How often a page still waiting for news looks again at first, in seconds (the script then backs off). */
export const PENDING_REFRESH_SECONDS = 2;
/** A settling bank debit takes days: its page looks again every few minutes, not seconds. */
export const SETTLING_REFRESH_SECONDS = 300;
/** The longest the script of a pending page waits between polls (a settling one: its own period). */
const LONGEST_POLL_SECONDS = 30;
/**
 * Without JavaScript, a page whose next step is the buyer's (a button to the checkout: back by its
 * cancel link, a decline, or a visit not from paying) reloads itself this often, not every few
 * seconds: a page reloading under a reader starts again at the top. The script polls as on any
 * pending page.
 */
const LEFT_RELOAD_SECONDS = LONGEST_POLL_SECONDS;
/** The way from this page to Stripe's once the checkout opens: the page's fetch and the redirect, about a second. */
const HOP_SECONDS = 1;
/** How long a refund takes to reach the buyer's account, as card issuers and banks commonly take. */
const REFUND_DAYS = '5 to 10 working days';

/** Ended without a sale: while the product is still on sale, the page offers to buy it again. */
const ENDED_UNSOLD: readonly PurchaseStatus[] = ['expired', 'payment_failed', 'failed'];

interface Outcome {
  heading: string;
  /** good, bad or wait: the colour of the notice. */
  tone: 'good' | 'bad' | 'wait';
  words: Html;
  /** News may come: look again after this many seconds at first (absent: the outcome is final). */
  pollSeconds?: number;
  /** The back-off stops here (default LONGEST_POLL_SECONDS). */
  longestPollSeconds?: number;
  /** Without JavaScript, the page reloads itself after this many seconds (default pollSeconds). */
  reloadSeconds?: number;
  /** The way to pay, a button under the outcome. */
  pay?: string;
}

/**
 * How the buyer came to the page: `left` by the checkout's cancel link, `paid` by its success return
 * (`?result=paid`: Stripe sends a buyer there only once a payment went through), else neither (a link,
 * a bookmark, My purchases).
 */
interface Arrival {
  left: boolean;
  paid?: boolean;
}

function awaitingPayment(p: PurchaseModel, { left, paid: justPaid }: Arrival, now: Date): Outcome {
  const ends = p.holdExpiresAt ? countdown(p.holdExpiresAt, now, { id: 'hold-ends' }) : html`soon`;
  if (p.settlingSince) {
    return {
      heading: 'Your bank payment is being confirmed',
      tone: 'wait',
      words: html`You paid by bank debit on ${utcClock(p.settlingSince, now)}. Bank debits take a few working days to
      clear; there is nothing more for you to do, and your item is kept for you meanwhile (at the latest until its
      reservation ends ${ends}). Come back to this page to see the outcome.`,
      pollSeconds: SETTLING_REFRESH_SECONDS,
    };
  }
  // Back from a payment that went through (the success return): an earlier attempt's decline is old
  // news until this payment's webhook lands (the purchase knows of the retry only then).
  if (justPaid) {
    return {
      heading: 'Confirming your payment',
      tone: 'wait',
      words: html`You have just paid: your payment is being confirmed with the payment provider. This usually takes a
      few seconds, and this page shows the outcome by itself. Your item stays reserved; the reservation ends ${ends}.`,
      pollSeconds: PENDING_REFRESH_SECONDS,
    };
  }
  if (p.reason?.includes('declined')) {
    return {
      heading: 'Your payment was declined: try again',
      tone: 'bad',
      words: html`Your last payment attempt was declined${left ? html` and you left the checkout` : html``}. Nothing was
      charged. You may try again, with this card or another; your item stays reserved and the reservation ends ${ends}.`,
      pollSeconds: PENDING_REFRESH_SECONDS,
      reloadSeconds: LEFT_RELOAD_SECONDS,
      pay: 'Try again',
    };
  }
  if (left) {
    return {
      heading: 'You have not paid yet',
      tone: 'wait',
      words: html`You left the checkout without paying. Your item stays reserved for you; the reservation ends ${ends}.`,
      pollSeconds: PENDING_REFRESH_SECONDS,
      reloadSeconds: LEFT_RELOAD_SECONDS,
      pay: 'Go back to the checkout',
    };
  }
  // Neither back from paying nor by the cancel link (My purchases, the link of a Buy refused because this
  // one holds the item, a bookmark): the way to pay, and the payment's news if one was made.
  return {
    heading: 'Your item is reserved',
    tone: 'wait',
    words: html`Pay on the checkout to complete the purchase; the reservation ends ${ends}. If you have just paid, your
    payment is being confirmed with the payment provider, and this page shows the outcome by itself.`,
    pollSeconds: PENDING_REFRESH_SECONDS,
    reloadSeconds: LEFT_RELOAD_SECONDS,
    pay: 'Go to the checkout',
  };
}

function outcomeOf(p: PurchaseModel, arrival: Arrival, now: Date): Outcome {
  switch (p.status) {
    case 'holding': {
      const q = p.checkoutQueue;
      if (!q) {
        return {
          heading: 'Reserving your item',
          tone: 'wait',
          words: html`Your item is being reserved and the checkout prepared. This page updates by itself.`,
          pollSeconds: PENDING_REFRESH_SECONDS,
        };
      }
      const ahead =
        q.ahead === 0 ? 'You are next' : `${q.ahead} ${q.ahead === 1 ? 'buyer is' : 'buyers are'} ahead of you`;
      return {
        heading: 'Preparing your checkout',
        tone: 'wait',
        words: html`${
          p.holdExpiresAt
            ? html`Your item is reserved for you; the reservation ends ${countdown(p.holdExpiresAt, now)}.`
            : html`Your purchase is in line: your item is reserved when its turn comes.`
        }
        Checkouts open one after the other at the pace our payment provider allows: ${ahead}, about
        ${formatWait(q.estimatedWaitSeconds + PENDING_REFRESH_SECONDS + HOP_SECONDS)}. This page updates by itself and
        takes you on to pay.`,
        pollSeconds: PENDING_REFRESH_SECONDS,
        // The checkout opens within seconds: no back-off beyond a few.
        longestPollSeconds: 2 * PENDING_REFRESH_SECONDS,
      };
    }
    case 'awaiting_payment':
      return awaitingPayment(p, arrival, now);
    case 'confirmed':
      return {
        heading: 'Your purchase is confirmed',
        tone: 'good',
        words: html`Your purchase is confirmed${amountOf(p) ? `: you paid ${amountOf(p)}` : ''}. Thank you!`,
      };
    case 'late_confirmed':
      return {
        heading: 'Your purchase is confirmed',
        tone: 'good',
        words: html`Your purchase is confirmed. Thank you! Your payment arrived after your reservation had ended, but
        the item was still there, so it is yours.`,
      };
    case 'expired':
      return {
        heading: 'Your reservation expired',
        tone: 'bad',
        words:
          // Also "cancelled by the buyer before the checkout opened".
          p.reason?.startsWith('cancelled by the buyer')
            ? html`You cancelled this purchase; nothing was charged.`
            : html`Your reservation expired before the payment arrived; nothing was charged and the item went back on
              sale.`,
      };
    case 'payment_failed':
      return {
        heading: 'The payment failed',
        tone: 'bad',
        words: html`The payment failed (${p.reason ?? 'no reason was given'}); nothing was charged and the item went
        back on sale.`,
      };
    case 'refunded':
      return {
        heading: 'Refunded',
        tone: 'bad',
        words: html`Your payment${paid(p)} for ${p.productName ?? p.sku} was refunded in full: it reaches your account
        within ${REFUND_DAYS}, on the card or account you paid with. Why:
        ${p.refund?.reason ?? p.reason ?? 'no reason was recorded'}.`,
      };
    case 'failed':
      return {
        heading: 'The purchase could not be completed',
        tone: 'bad',
        words: html`The purchase could not be completed (${p.reason ?? 'no reason was given'}); nothing was charged.`,
      };
    case 'needs_attention':
      return {
        heading: 'Your purchase needs attention',
        tone: 'wait',
        words: html`Your payment arrived but could not be settled automatically. Our support team has been told and will
        sort it out: you will not be charged twice, and are refunded if the purchase cannot go through.`,
      };
  }
}

/** What the buyer pays, "€89.00"; empty before the hold is taken. */
const amountOf = (p: PurchaseModel) =>
  p.amountCents !== null && p.currency ? formatMoney(p.amountCents, p.currency) : '';
/** The order's money: ", €89.00", or with more than one ", at €44.50 each: €89.00". */
function breakdown(p: PurchaseModel): string {
  if (!amountOf(p)) return '';
  if (p.quantity <= 1) return `, ${amountOf(p)}`;
  return `, at ${formatMoney(p.amountCents! / p.quantity, p.currency!)} each: ${amountOf(p)}`;
}

/** " of €89.00", or nothing when the amount is not known. */
const paid = (p: PurchaseModel) => (amountOf(p) ? ` of ${amountOf(p)}` : '');

function refundLine(p: PurchaseModel): Html {
  if (!p.refund || p.status === 'refunded') return html``;
  const state =
    p.refund.status === 'succeeded'
      ? 'has been made'
      : p.refund.status === 'failed'
        ? 'failed; support will make it by hand'
        : 'is on its way';
  const back = p.refund.status === 'failed' ? '' : ` The money reaches your account within ${REFUND_DAYS}.`;
  return html`<p id="refund">A refund${paid(p)} ${state}.${back} Why: ${p.refund.reason}.</p>`;
}

/** A confirmed purchase's receipt: when it was confirmed, where it ships, and what happens next. */
function receipt(p: PurchaseModel): Html {
  if (p.status !== 'confirmed' && p.status !== 'late_confirmed') return html``;
  const lines = p.shippingLines ?? [];
  const when = p.confirmedAt
    ? html`<dt>Confirmed</dt>
        <dd><time datetime="${p.confirmedAt}" id="confirmed-at">${receiptTime(p.confirmedAt)}</time></dd>`
    : html``;
  const where = lines.length
    ? html`<dt>Ships to</dt>
        <dd>
          <address id="ships-to">${lines.map((l, i) => (i ? html`<br />${l}` : html`${l}`))}</address>
        </dd>`
    : html``;
  const next = lines.length
    ? 'What happens next: your order is sent to this address. '
    : 'What happens next: nothing more for you to do. ';
  return html`${p.confirmedAt || lines.length ? html`<dl id="receipt">${when}${where}</dl>` : html``}
    <p id="next">${next}This page is your receipt: you find it again under My purchases.</p>`;
}

/**
 * `payNext`: the buyer pressed Buy and was sent here while the checkout was being prepared: once it
 * is ready, the page takes them on to it (they did not leave it: they never saw it).
 */
export function purchasePage(
  p: PurchaseModel,
  viewer: Viewer,
  o: Arrival & { payNext?: boolean; now?: Date; onSale?: boolean },
): string {
  const now = o.now ?? new Date();
  const onToPay = o.payNext && !o.left && p.status === 'awaiting_payment' && p.checkoutUrl && !p.settlingSince;
  const out: Outcome = onToPay
    ? {
        heading: 'Your checkout is ready',
        tone: 'good',
        words: html`Your item is reserved and the payment page is open for you: taking you there now.`,
        pay: 'Go to the payment page',
      }
    : outcomeOf(p, { left: o.left, paid: o.paid === true && !o.left }, now);
  const product = p.productName ?? p.sku;
  const pay =
    out.pay && p.checkoutUrl
      ? html`<p><a class="button" href="${p.checkoutUrl}" id="pay">${out.pay}</a></p>`
      : o.onSale && ENDED_UNSOLD.includes(p.status)
        ? html`<p><a class="button" href="/p/${encodeURIComponent(p.sku)}" id="buy-again">Buy again</a></p>`
        : html``;
  const main = html`<h1>${out.heading}</h1>
    <p class="notice ${out.tone}" id="outcome" data-status="${p.status}" role="status">${out.words}</p>
    ${pay}${refundLine(p)}
    <p id="order">
      ${p.quantity} × <a href="/p/${encodeURIComponent(p.sku)}">${product}</a>${breakdown(p)}. Purchase
      <code id="purchase">${p.purchaseId}</code>.
    </p>
    ${receipt(p)}`;
  const live: Live | undefined = out.pollSeconds
    ? {
        pollUrl: `/purchases/${encodeURIComponent(p.purchaseId)}`,
        watch: watched(p),
        seconds: out.pollSeconds,
        maxSeconds: Math.max(out.pollSeconds, out.longestPollSeconds ?? LONGEST_POLL_SECONDS),
      }
    : undefined;
  return layout({
    title: out.heading,
    main,
    ...viewer,
    now,
    ...(onToPay
      ? { refreshSeconds: 1, refreshTo: p.checkoutUrl }
      : live
        ? { live, ...(out.reloadSeconds ? { refreshSeconds: out.reloadSeconds } : {}) }
        : {}),
  });
}

/** The buyer's purchases (GET /purchases), newest first: each one's product, amount and where it stands. */
export function purchasesPage(
  list: (PurchaseModel & { createdAt: string })[],
  viewer: Viewer,
  now = new Date(),
): string {
  const rows = list.map((p) => {
    return html`<li>
      <h2><a href="/purchases/${encodeURIComponent(p.purchaseId)}">${p.quantity} × ${p.productName ?? p.sku}</a></h2>
      <p>
        <span data-status="${p.status}">${outcomeOf(p, { left: false }, now).heading}</span>${breakdown(p)} · bought
        ${utcClock(p.createdAt, now)}
      </p>
    </li>`;
  });
  const main = list.length
    ? html`<h1>My purchases</h1>
        <ul class="products" id="purchases">
          ${rows}
        </ul>`
    : html`<h1>My purchases</h1>
        <p id="purchases">You have no purchases yet. <a href="/">See what is on sale</a>.</p>`;
  return layout({ title: 'My purchases', main, ...viewer, now });
}

/** What the page shows of the purchase's JSON: a change in any of these is news. */
function watched(p: PurchaseModel): Record<string, unknown> {
  return {
    status: p.status,
    reason: p.reason,
    checkoutUrl: p.checkoutUrl,
    refund: p.refund,
    settlingSince: p.settlingSince,
    checkoutQueue: p.checkoutQueue,
  };
}
