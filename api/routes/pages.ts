import { randomUUID } from 'node:crypto';
import { Router } from '@koa/router';
import type Koa from 'koa';
import { perPurchaseLimit, refusalInWords, rulesInWords, splitRuleTerms } from '../../store/rules';
import type { ProductTerms } from '../../vocabulary';
import { homePage, productPage, type ProductModel, type Viewer } from '../../web/catalogue';
import { purchasePage, purchasesPage } from '../../web/purchase';
import { buyerPurchases } from '../../store/purchases';
import { shippingLines } from '../../store/confirmation';
import { findTicket } from '../../store/room';
import { queuePage } from '../../web/queue';
import { pageBuyer } from '../buyer-session';
import { productView, type ProductView } from '../catalogue-view';
import type { ApiDeps } from '../deps';
import { Problem } from '../problem';
import { checkoutQueueView } from '../checkout-pace';
import { purchaseView } from '../purchase-answers';
import { visiblePurchase } from '../purchase-flow';
import { receiptOf, receiptView } from '../receipt';

// The buyer's pages (GET): what is on sale, a product, a purchase's outcome, a place in a queue.
// Rendering is web/'s; here: who is looking, what to read, and the HTTP around it. Errors become
// pages (api/page-errors.ts).

/** The most purchases "My purchases" lists (the newest). */
const MY_PURCHASES_LIMIT = 50;

/** A product's public view (GET /v1/products/:sku) as the pages show it. */
export async function productModel(deps: ApiDeps, sku: string): Promise<ProductModel> {
  return modelOf(await productView(deps, sku));
}

/** The terms the purchase rules read, from a product's public view (its rules' own terms among its fields). */
function termsOfView(v: ProductView): ProductTerms {
  return {
    ...v,
    ...(v.shippingCountries ? { shippingCountries: v.shippingCountries } : {}),
    rules: splitRuleTerms(v).ruleTerms,
  };
}

function modelOf(v: ProductView & { opensAt?: string | null }): ProductModel {
  const terms = termsOfView(v);
  const cap = perPurchaseLimit(terms);
  return {
    sku: v.sku,
    name: v.name,
    priceCents: v.priceCents,
    currency: v.currency,
    available: v.available,
    held: v.held,
    soldOut: v.soldOut,
    maxPerBuyer: v.maxPerBuyer,
    ...(v.opensAt ? { opensAt: v.opensAt } : {}),
    hasRoom: v.waitingRoom != null,
    ...(v.waitingRoom ? { turnSeconds: v.waitingRoom.sessionSeconds } : {}),
    botCheck: v.botCheck,
    rules: rulesInWords(terms),
    ...(cap ? { maxPerPurchase: cap.max } : {}),
  };
}

/** Who is looking: the buyer of the cookie, and where to sign in when there is a sign-in page. */
export async function viewerOf(ctx: Koa.Context, deps: ApiDeps): Promise<Viewer> {
  const buyer = await pageBuyer(ctx, deps);
  if (buyer) return { buyer };
  return deps.pages?.devSignInSecret ? { signInHref: `/sign-in?next=${encodeURIComponent(ctx.path)}` } : {};
}

function send(ctx: Koa.Context, body: string): void {
  ctx.type = 'text/html; charset=utf-8';
  // Pages carry a buyer's data and fresh idempotency keys: never kept by a cache.
  ctx.set('Cache-Control', 'no-store');
  ctx.body = body;
}

export function pageRoutes(deps: ApiDeps): Router {
  const router = new Router();

  router.get('/', async (ctx) => {
    const viewer = await viewerOf(ctx, deps);
    // The catalogue as this process last read it (at most CATALOGUE_CACHE_MS old), not a read per product.
    send(ctx, homePage((await deps.catalogue.newest(deps)).map(modelOf), viewer));
  });

  router.get('/p/:sku', async (ctx) => {
    const viewer = await viewerOf(ctx, deps);
    const product = await productModel(deps, ctx.params.sku);
    // A buyer already in the line is shown the way to their place, not a second Join.
    const inQueue =
      product.hasRoom && viewer.buyer !== undefined && (await findTicket(deps.db, product.sku, viewer.buyer));
    send(ctx, productPage({ ...product, inQueue: Boolean(inQueue) }, viewer, randomUUID(), new Date(deps.clock.now())));
  });

  router.get('/purchases', async (ctx) => {
    const buyer = await pageBuyer(ctx, deps);
    if (!buyer) throw new Problem(401, 'unauthorized', 'sign in to see your purchases');
    const records = await buyerPurchases(deps.db, buyer, MY_PURCHASES_LIMIT);
    const names = new Map<string, string | undefined>();
    for (const sku of new Set(records.map((r) => r.sku))) {
      names.set(sku, (await productModel(deps, sku).catch(() => undefined))?.name);
    }
    const list = records.map((r) => ({ ...purchaseView(r), productName: names.get(r.sku), createdAt: r.createdAt }));
    send(ctx, purchasesPage(list, { buyer }, new Date(deps.clock.now())));
  });

  router.get('/purchases/:id', async (ctx) => {
    const buyer = await pageBuyer(ctx, deps);
    if (!buyer) throw new Problem(401, 'unauthorized', 'sign in to see your purchase');
    const record = await visiblePurchase(deps, ctx.params.id, { support: false, buyerId: buyer });
    const view = purchaseView(record, await checkoutQueueView(deps, record));
    const receipt = await receiptOf(deps, record);
    // The page's script polls this path for the purchase's JSON (GET /v1/purchases/:id's answer): the
    // cookie is the buyer here, and the JSON API takes a bearer token only.
    if (ctx.accepts('html', 'json') === 'json') {
      ctx.set('Cache-Control', 'no-store');
      ctx.body = { ...view, ...receiptView(receipt) };
      return;
    }
    const pv = await productView(deps, view.sku).catch(() => undefined);
    const product = pv && modelOf(pv);
    // A rule's refusal in the buyer's words, naming the product (the record keeps the rule's own).
    const plain = (reason: string) =>
      (pv && refusalInWords(reason, { sku: pv.sku, name: pv.name, terms: termsOfView(pv) })) ?? reason;
    send(
      ctx,
      purchasePage(
        {
          ...view,
          productName: product?.name,
          ...(view.reason ? { reason: plain(view.reason) } : {}),
          ...(view.refund ? { refund: { ...view.refund, reason: plain(view.refund.reason) } } : {}),
          ...(receipt.confirmedAt ? { confirmedAt: receipt.confirmedAt } : {}),
          ...(receipt.shipping ? { shippingLines: shippingLines(receipt.shipping) } : {}),
        },
        { buyer },
        {
          left: ctx.query.result === 'cancel',
          // The success return (CHECKOUT_SUCCESS_URL's default): a payment went through just now.
          paid: ctx.query.result === 'paid',
          payNext: ctx.query.then === 'pay',
          now: new Date(deps.clock.now()),
          onSale: product !== undefined && !product.soldOut,
        },
      ),
    );
  });

  // The success and cancel URL of Checkout Sessions created before the buyer's pages existed.
  router.get('/checkout/return/:id', (ctx) => {
    // Their success URL had no `result`: the buyer has just paid.
    const result = ctx.query.result === 'cancel' ? 'cancel' : 'paid';
    ctx.status = 303;
    ctx.redirect(`/purchases/${encodeURIComponent(ctx.params.id)}?result=${result}`);
  });

  router.get('/queue/:ticket', async (ctx) => {
    const viewer = await viewerOf(ctx, deps);
    const ticket = await deps.room.pageView(ctx.params.ticket, viewer.buyer);
    if (!ticket) throw new Problem(404, 'not-found', 'there is no such place in a queue');
    const now = new Date(deps.clock.now());
    send(ctx, queuePage(ticket, await productModel(deps, ticket.sku), viewer, randomUUID(), now));
  });

  return router;
}
