import { botCheckField } from './bot-check';
import { html, type Html } from './html';
import { layout } from './layout';
import { formatMoney } from './money';
import { countdown } from './time';

// GET / (what is on sale) and GET /p/:sku (one product: Buy, Join the queue, or when it opens).

/** A product as the pages show it. */
export interface ProductModel {
  sku: string;
  name: string;
  priceCents: number;
  currency: string;
  available: number;
  held: number;
  soldOut: boolean;
  maxPerBuyer: number;
  /** ISO time before which nothing can be bought (with a room: before which its pre-queue is joined). */
  opensAt?: string;
  /** The product is sold through a waiting room: the buyer joins the queue instead of buying. */
  hasRoom: boolean;
  /** Joining (with a room) or buying (without) needs the bot check solved in the browser. */
  botCheck?: boolean;
  /** The purchase rules that apply, in the buyer's words (store/rules/: where it ships, the limits per address, per card). */
  rules?: string[];
  /** With a room: the viewer already has a ticket in its line. */
  inQueue?: boolean;
  /** With a room: how long an admitted buyer has to buy. */
  turnSeconds?: number;
  /** The most one purchase may take: the smallest of maxPerBuyer and the rules' own caps. */
  maxPerPurchase?: number;
}

/** Who is looking: the signed-in buyer, or where to sign in (absent: signing in happens on the shop's site). */
export interface Viewer {
  buyer?: string;
  signInHref?: string;
}

const productHref = (sku: string) => `/p/${encodeURIComponent(sku)}`;

function stockWords(p: ProductModel): Html {
  if (!p.soldOut) return html`<span class="stock">${p.available} left</span>`;
  return p.held > 0 ? html`<span class="stock">Sold out for now</span>` : html`<span class="stock">Sold out</span>`;
}

export function homePage(products: ProductModel[], viewer: Viewer): string {
  const items = products.map(
    (p) =>
      html`<li>
        <h2><a href="${productHref(p.sku)}">${p.name}</a></h2>
        <p><span class="price">${formatMoney(p.priceCents, p.currency)}</span> · ${stockWords(p)}</p>
      </li>`,
  );
  const main = products.length
    ? html`<h1>On sale</h1>
        <ul class="products">
          ${items}
        </ul>`
    : html`<h1>On sale</h1>
        <p>Nothing is on sale right now.</p>`;
  return layout({ title: 'On sale', main, ...viewer });
}

/** What the product page offers, decided from the product, the clock and the viewer. */
function offer(p: ProductModel, viewer: Viewer, idempotencyKey: string, now: Date): Html {
  const opensIn = p.opensAt ? (Date.parse(p.opensAt) - now.getTime()) / 1000 : 0;
  if (opensIn > 0) {
    const opening = html`<p class="notice wait" id="${p.hasRoom ? 'opens' : 'offer'}" data-state="not_open">
      Opens ${countdown(p.opensAt!, now, { id: 'countdown', reload: true })}.
    </p>`;
    // A room's pre-queue is joined before the opening (places are drawn at random then), so joining early is fair.
    if (!p.hasRoom) return opening;
    if (!viewer.buyer) return html`${opening}${signInOffer(viewer)}`;
    if (p.inQueue) return html`${opening}${yourPlace(p)}`;
    return html`${opening}
      <form method="post" action="${productHref(p.sku)}/queue" id="offer" data-state="prequeue">
        <p>Join the queue now: at the opening, everyone who joined before it is given a place at random.</p>
        ${p.botCheck ? botCheckField('Join the queue') : ''}
        <button type="submit">Join the queue</button>
      </form>`;
  }
  if (p.soldOut) {
    const why =
      p.held > 0
        ? 'Every one is sold or held by another buyer. Held items come back if their buyer does not pay: look again in a few minutes.'
        : 'Every one has been sold.';
    return html`<p class="notice bad" id="offer" data-state="sold_out"><strong>Sold out.</strong> ${why}</p>`;
  }
  if (!viewer.buyer) return signInOffer(viewer);
  const action = `${productHref(p.sku)}/${p.hasRoom ? 'queue' : 'buy'}`;
  if (p.hasRoom && p.inQueue) return yourPlace(p);
  if (p.hasRoom) {
    return html`<form method="post" action="${action}" id="offer" data-state="queue">
      <p>This sale has a waiting room: join the queue and you are let in to buy in turn.</p>
      ${p.botCheck ? botCheckField('Join the queue') : ''}
      <button type="submit">Join the queue</button>
    </form>`;
  }
  return buyForm(p, idempotencyKey, action, p.botCheck ? botCheckField('Buy') : html``);
}

/**
 * A buyer who already has a ticket: the way to their place, not a second "Join" (joining again is
 * the same ticket: the form leads to it, whatever became of it).
 */
function yourPlace(p: ProductModel): Html {
  return html`<form method="post" action="${productHref(p.sku)}/queue" id="offer" data-state="in_queue">
    <p>You are already in the queue for this sale: your place is kept.</p>
    ${p.botCheck ? botCheckField('See your place') : ''}
    <button type="submit">See your place</button>
  </form>`;
}

function signInOffer(viewer: Viewer): Html {
  return viewer.signInHref
    ? html`<p id="offer" data-state="sign_in"><a href="${viewer.signInHref}">Sign in to buy</a></p>`
    : html`<p id="offer" data-state="sign_in">Sign in on the shop's site to buy.</p>`;
}

/** The rules of the sale, before the buyer pays: the per-buyer limit, then the purchase rules. */
function rulesList(p: ProductModel): Html {
  const perBuyer = p.maxPerBuyer === 1 ? 'One per buyer.' : `At most ${p.maxPerBuyer} per buyer.`;
  return html`<ul class="rules" id="rules" aria-label="Rules of this sale">
    ${[perBuyer, ...(p.rules ?? [])].map((r) => html`<li>${r}</li>`)}
  </ul>`;
}

/**
 * The Buy form. The Idempotency-Key rides in the form, made when the page was rendered: a double
 * submit, or a resubmit after Back, makes the same purchase again, never a second one.
 */
export function buyForm(p: ProductModel, idempotencyKey: string, action: string, extra: Html = html``): Html {
  const most = Math.min(p.maxPerBuyer, p.maxPerPurchase ?? p.maxPerBuyer);
  const quantity =
    most > 1
      ? html`<label for="quantity">Quantity (at most ${most})</label>
          <input
            id="quantity"
            name="quantity"
            type="number"
            inputmode="numeric"
            min="1"
            max="${most}"
            value="1"
            required
          />`
      : html`<input type="hidden" name="quantity" value="1" />`;
  return html`<form method="post" action="${action}" id="offer" data-state="buy">
    <input type="hidden" name="idempotencyKey" value="${idempotencyKey}" />
    ${extra}${quantity}
    <p><button type="submit" id="buy">Buy</button></p>
    <p class="muted" id="pace">
      In a rush, your item is reserved as soon as your turn comes; the payment page follows.
    </p>
  </form>`;
}

export function productPage(p: ProductModel, viewer: Viewer, idempotencyKey: string, now = new Date()): string {
  const opensIn = p.opensAt ? (Date.parse(p.opensAt) - now.getTime()) / 1000 : 0;
  const main = html`<h1 id="name">${p.name}</h1>
    <p><span class="price" id="price">${formatMoney(p.priceCents, p.currency)}</span> · ${stockWords(p)}</p>
    ${rulesList(p)} ${offer(p, viewer, idempotencyKey, now)}`;
  return layout({
    title: p.name,
    main,
    ...viewer,
    now,
    // Before the opening, without JavaScript: look again at the opening, at least every minute (the
    // script reloads at the opening itself).
    ...(opensIn > 0 ? { refreshSeconds: Math.max(1, Math.min(60, Math.ceil(opensIn))) } : {}),
  });
}
