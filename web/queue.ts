import { isFinal, isPaid, type PurchaseStatus } from '../vocabulary';
import { buyForm, type ProductModel, type Viewer } from './catalogue';
import { html, type Html } from './html';
import { layout } from './layout';
import { formatWait } from './money';

// GET /queue/:ticket: a buyer's place in a product's waiting room. It refreshes itself while the
// buyer waits; once admitted it shows the Buy form (carrying the admission token), once the turn
// is spent the purchase instead, and says so when the product sold out or the turn passed (never
// offering to join again: a buyer has one ticket per SKU).

/** A ticket as GET /v1/queue/:ticket describes it. */
export interface TicketModel {
  ticket: string;
  sku: string;
  /** Buyers ahead in line (null in the pre-queue, before places are drawn). */
  position: number | null;
  state: 'prequeue' | 'waiting' | 'admitted' | 'sold_out' | 'expired';
  estimatedWaitSeconds: number;
  admissionToken?: string;
  admissionExpiresAt?: string;
  opensAt?: string;
  /** The purchase the admission was spent on (the page knows it as soon as it is recorded). */
  purchaseId?: string;
  /** That purchase's status, when the page read it. */
  purchaseStatus?: string;
}

/** Refresh period while waiting: soon when the turn is near, at most every 10 s. */
export function queueRefreshSeconds(t: TicketModel): number {
  return Math.max(2, Math.min(10, Math.ceil(t.estimatedWaitSeconds / 4)));
}

export function queuePage(t: TicketModel, product: ProductModel, viewer: Viewer, idempotencyKey: string): string {
  const name = product.name;
  let main;
  let refresh: number | undefined;
  switch (t.state) {
    case 'prequeue':
      refresh = queueRefreshSeconds(t);
      main = html`<h1>You are in the queue for ${name}</h1>
        <p class="notice wait" id="queue" data-state="prequeue" role="status">
          The sale has not opened
          yet${t.opensAt ? html` (it opens <time datetime="${t.opensAt}">${new Date(t.opensAt).toUTCString()}</time>)` : ''}.
          Places are drawn at random at the opening: everyone who joined before then has the same chance. This page
          updates by itself.
        </p>`;
      break;
    case 'waiting':
      refresh = queueRefreshSeconds(t);
      main = html`<h1>You are in the queue for ${name}</h1>
        <p class="notice wait" id="queue" data-state="waiting" role="status">
          Buyers ahead of you: <strong id="position">${t.position ?? 0}</strong>. Estimated wait:
          <strong id="wait">${formatWait(t.estimatedWaitSeconds)}</strong>. Buyers are let in at the pace checkouts can
          be opened with our payment provider. Keep this page open: it updates by itself, and you can buy as soon as it
          is your turn.
        </p>`;
      break;
    case 'admitted': {
      if (t.purchaseId) {
        // The turn was spent: a Buy form here would only be refused (the admission is used up).
        main = spentTurn(t, t.purchaseId, name);
        break;
      }
      const until = t.admissionExpiresAt
        ? html` Buy before
            <time datetime="${t.admissionExpiresAt}">${new Date(t.admissionExpiresAt).toUTCString()}</time>, or your
            turn passes.`
        : html``;
      const token = html`<input type="hidden" name="admissionToken" value="${t.admissionToken ?? ''}" />`;
      main = html`<h1>It is your turn: ${name}</h1>
        <p class="notice good" id="queue" data-state="admitted" role="status">You may buy now.${until}</p>
        ${buyForm(product, idempotencyKey, `/p/${encodeURIComponent(t.sku)}/buy`, token)}`;
      break;
    }
    case 'sold_out':
      main = html`<h1>${name} is sold out</h1>
        <p class="notice bad" id="queue" data-state="sold_out" role="status">
          Sorry: everything was sold before your turn came.
        </p>`;
      break;
    case 'expired':
      main = html`<h1>Your turn has passed</h1>
        <p class="notice bad" id="queue" data-state="expired" role="status">
          You were let in but did not buy in time, so your turn went to the next buyer. There is one turn per buyer:
          this line has no other place for you.
        </p>`;
      break;
  }
  return layout({ title: `Queue · ${name}`, main, ...viewer, ...(refresh ? { refreshSeconds: refresh } : {}) });
}

/**
 * A turn spent on a purchase: where that purchase is. One that came to nothing is a turn passed, said
 * plainly: joining again is the same ticket, so no link pretends to give a new place.
 */
function spentTurn(t: TicketModel, purchaseId: string, name: string): Html {
  const status = t.purchaseStatus as PurchaseStatus | undefined;
  const link = html`<a id="purchase" href="/purchases/${encodeURIComponent(purchaseId)}">see your purchase</a>`;
  if (status && isFinal(status) && !isPaid(status)) {
    return html`<h1>Your turn has passed</h1>
      <p class="notice bad" id="queue" data-state="spent" role="status">
        Your purchase during your turn did not go through (${link}), and your turn is over. There is one turn per buyer:
        this line has no other place for you.
      </p>`;
  }
  return html`<h1>You have a purchase: ${name}</h1>
    <p class="notice good" id="queue" data-state="bought" role="status">You used your turn to buy: ${link}.</p>`;
}
