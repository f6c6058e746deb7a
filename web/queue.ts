import { isFinal, isPaid, type PurchaseStatus } from '../vocabulary';
import { buyForm, type ProductModel, type Viewer } from './catalogue';
import { html, type Html } from './html';
import { layout } from './layout';
import type { Live } from './live';
import { formatWait } from './money';
import { countdown, updatedAt } from './time';

// GET /queue/:ticket: a buyer's place in a product's waiting room. While the buyer waits it keeps
// itself up to date (in place with JavaScript, polling GET /v1/queue/:ticket; by reloading without)
// and says why the line does not move when it does not (a full room, a paused one); once admitted
// it shows the Buy form (carrying the admission token) and how long the turn lasts, once the turn
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
  /** The room's own state (paused or closed by the operator: the line keeps, nobody is let in). */
  roomState?: 'open' | 'paused' | 'closed';
  /** While waiting: as many buyers are inside as the room takes. */
  roomFull?: boolean;
  /** While waiting: every unit that can still be had is spoken for by buyers inside (GET /v1/queue/:ticket). */
  soldOutForNow?: { unitsMayComeBack: number; nextMayComeBackAt?: string; withinReach: boolean };
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

/** The longest a waiting page's script waits between polls while nothing changes. */
const LONGEST_POLL_SECONDS = 30;

/** The way on from a line that has no place left for the buyer: the rest of the sale. */
const elsewhere = html`<p><a href="/" id="elsewhere">See what else is on sale</a></p>`;

/** Why the line is not moving, or how fast it moves, in words. */
function lineWords(t: TicketModel, now: Date): Html {
  const wait = html`<strong id="wait">${formatWait(t.estimatedWaitSeconds)}</strong>`;
  const forNow = t.soldOutForNow;
  if (forNow) {
    const units = forNow.unitsMayComeBack === 1 ? 'One' : String(forNow.unitsMayComeBack);
    const next = forNow.nextMayComeBackAt
      ? html`, the first at the latest ${countdown(forNow.nextMayComeBackAt, now)}`
      : html``;
    return html`<strong id="sold-out-for-now">Sold out for now:</strong> every one is spoken for by buyers let in before
      you. ${forNow.unitsMayComeBack > 0 ? html`${units} may come back if their buyers do not pay${next}.` : html``}
      ${
        forNow.withinReach
          ? html`You are near enough the front to get one if it does: your place is kept.`
          : html`More buyers are ahead of you than could get one, so you are unlikely to, unless more are put on sale:
            your place is kept all the same.`
      }`;
  }
  if (t.roomState === 'paused' || t.roomState === 'closed') {
    return html`<strong id="paused"
        >The shop has ${t.roomState === 'paused' ? 'paused' : 'stopped'} letting buyers in for now.</strong
      >
      Your place is kept, and the line moves again when it lets buyers in. Until then no wait can be promised: at least
      ${wait}, and more for every minute it stays ${t.roomState}.`;
  }
  if (t.roomFull) {
    return html`<strong id="full">The shop is full:</strong> the buyers inside are paying, and the next in line is let
      in as each finishes. Estimated wait: about ${wait}; it grows while nobody is let in.`;
  }
  return html`Estimated wait: about ${wait}.`;
}

export function queuePage(
  t: TicketModel,
  product: ProductModel,
  viewer: Viewer,
  idempotencyKey: string,
  now = new Date(),
): string {
  const name = product.name;
  let main;
  let title = `Queue · ${name}`;
  const turn = product.turnSeconds ? formatWait(product.turnSeconds) : 'a few minutes';
  const comeBack = html`<p id="come-back">
    You need not keep this page open: your place is kept, and this page's address brings you back to it. When your turn
    comes you have ${turn} to buy.
  </p>`;
  let live: Live | undefined;
  switch (t.state) {
    case 'prequeue':
      live = liveOf(t);
      main = html`<h1>You are in the queue for ${name}</h1>
        <p class="notice wait" id="queue" data-state="prequeue" role="status">
          The sale has not opened yet${t.opensAt ? html`: it opens ${countdown(t.opensAt, now)}` : ''}. Places are drawn
          at random at the opening: everyone who joined before then has the same chance.
        </p>
        ${comeBack}${updatedAt(now)}`;
      break;
    case 'waiting':
      live = liveOf(t);
      title = `${t.position ?? 0} ahead · Queue · ${name}`;
      main = html`<h1>You are in the queue for ${name}</h1>
        <p class="notice wait" id="queue" data-state="waiting" role="status">
          Buyers ahead of you: <strong id="position">${t.position ?? 0}</strong>. ${lineWords(t, now)}
        </p>
        ${comeBack}${updatedAt(now)}`;
      break;
    case 'admitted': {
      if (t.purchaseId) {
        // The turn was spent: a Buy form here would only be refused (the admission is used up).
        main = spentTurn(t, t.purchaseId, name);
        break;
      }
      const until = t.admissionExpiresAt
        ? html` Your turn ends ${countdown(t.admissionExpiresAt, now, { id: 'turn-ends' })}: buy before then.`
        : html``;
      const token = html`<input type="hidden" name="admissionToken" value="${t.admissionToken ?? ''}" />`;
      title = `Your turn: buy ${name}`;
      main = html`<h1>It is your turn: ${name}</h1>
        <p class="notice good" id="queue" data-state="admitted" role="status">You may buy now.${until}</p>
        ${buyForm(product, idempotencyKey, `/p/${encodeURIComponent(t.sku)}/buy`, token)}`;
      break;
    }
    case 'sold_out':
      title = `Sold out · ${name}`;
      main = html`<h1>${name} is sold out</h1>
        <p class="notice bad" id="queue" data-state="sold_out" role="status">
          Sorry: everything was sold before your turn came.
        </p>
        ${elsewhere}`;
      break;
    case 'expired':
      title = `Turn passed · ${name}`;
      main = html`<h1>Your turn has passed</h1>
        <p class="notice bad" id="queue" data-state="expired" role="status">
          You were let in but did not buy in time, so your turn went to the next buyer. There is one turn per buyer:
          this line has no other place for you.
        </p>
        ${elsewhere}`;
      break;
  }
  return layout({ title, main, ...viewer, now, ...(live ? { live } : {}) });
}

/** A waiting page polls its ticket (GET /v1/queue/:ticket, answered with no database read) for what it shows. */
function liveOf(t: TicketModel): Live {
  return {
    pollUrl: `/v1/queue/${encodeURIComponent(t.ticket)}`,
    watch: {
      state: t.state,
      position: t.position,
      roomState: t.roomState ?? 'open',
      roomFull: t.roomFull ?? false,
      soldOutForNow: t.soldOutForNow,
    },
    seconds: queueRefreshSeconds(t),
    maxSeconds: LONGEST_POLL_SECONDS,
  };
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
      </p>
      ${elsewhere}`;
  }
  return html`<h1>You have a purchase: ${name}</h1>
    <p class="notice good" id="queue" data-state="bought" role="status">You used your turn to buy: ${link}.</p>`;
}
