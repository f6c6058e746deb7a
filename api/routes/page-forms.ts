import { bodyParser } from '@koa/bodyparser';
import { Router } from '@koa/router';
import type Koa from 'koa';
import { signInPage } from '../../web/notice';
import { requestId, requestLog } from '../access-log';
import { checkSameOrigin, clearBuyerCookie, pageBuyer, safeNext, signIn } from '../buyer-session';
import type { ApiDeps } from '../deps';
import { invalid, Problem } from '../problem';
import { checkForBots, joinSpender } from '../bot-check';
import { placePurchase } from '../purchase-flow';

// The buyer's forms: Buy (the same placePurchase as POST /v1/purchases), Join the queue, and the
// development sign-in. Every POST passes the same-origin check (CSRF) and is a urlencoded form.

/** A form is a few short fields (the bot check's payload, a signed challenge and its solution, is the longest). */
const FORM_LIMIT = '8kb';
/** The field the `altcha` widget puts its payload in (its `name`, web/bot-check.ts). */
const ALTCHA_FIELD = 'altcha';

const formBody: Koa.Middleware = (() => {
  const parse = bodyParser({
    enableTypes: ['form'],
    formLimit: FORM_LIMIT,
    encoding: 'utf-8',
    onError: () => {
      throw invalid([{ field: 'body', message: 'is not a readable form' }]);
    },
  });
  return async (ctx, next) => {
    if (!ctx.is('application/x-www-form-urlencoded')) {
      throw invalid([{ field: 'Content-Type', message: 'must be application/x-www-form-urlencoded (a form)' }]);
    }
    await parse(ctx, next);
  };
})();

/** One text field of the form, or undefined; a repeated or nested field is refused naming it. */
function field(ctx: Koa.Context, name: string): string | undefined {
  const v = (ctx.request.body as Record<string, unknown> | undefined)?.[name];
  if (v === undefined) return undefined;
  if (typeof v !== 'string') throw invalid([{ field: name, message: 'must be sent once, as text' }]);
  return v;
}

/** A buyer name for the development sign-in: what the buyer id will be. */
const NAME = /^[\p{L}\p{N}][\p{L}\p{N} ._'-]{0,63}$/u;

function send(ctx: Koa.Context, status: number, body: string): void {
  ctx.status = status;
  ctx.type = 'text/html; charset=utf-8';
  ctx.set('Cache-Control', 'no-store');
  ctx.body = body;
}

export function pageFormRoutes(deps: ApiDeps): Router {
  const router = new Router();
  const sameOrigin: Koa.Middleware = async (ctx, next) => {
    checkSameOrigin(ctx, deps.pages?.publicOrigin);
    await next();
  };
  const signedIn = async (ctx: Koa.Context) => {
    const buyer = await pageBuyer(ctx, deps);
    if (!buyer) throw new Problem(401, 'unauthorized', 'sign in to buy');
    return buyer;
  };

  router.post('/p/:sku/buy', sameOrigin, formBody, async (ctx) => {
    const buyerId = await signedIn(ctx);
    const key = field(ctx, 'idempotencyKey');
    if (!key) throw invalid([{ field: 'idempotencyKey', message: 'is required (reload the product page)' }]);
    const quantity = field(ctx, 'quantity');
    if (quantity !== undefined && !/^\d{1,4}$/.test(quantity.trim())) {
      throw invalid([{ field: 'quantity', message: 'must be a whole number' }]);
    }
    const placed = await placePurchase(deps, {
      buyerId,
      ip: ctx.ip,
      idempotencyKey: key,
      keyField: 'idempotencyKey',
      body: { sku: ctx.params.sku, ...(quantity !== undefined ? { quantity: Number(quantity) } : {}) },
      respondAsync: false,
      admissionToken: field(ctx, 'admissionToken'),
      altcha: field(ctx, ALTCHA_FIELD),
      requestId: requestId(ctx),
      log: requestLog(ctx),
    });
    const { purchaseId, checkoutUrl, status } = placed.body as {
      purchaseId: string;
      checkoutUrl?: string;
      status?: string;
    };
    // To Stripe's page while there is something to pay; a purchase already over has its outcome page.
    // No URL yet (202: the session waits for its turn in the Stripe budget): the purchase's page says
    // so and takes the buyer on to the checkout once it opens.
    const page = `/purchases/${encodeURIComponent(purchaseId)}`;
    ctx.status = 303;
    ctx.redirect(checkoutUrl ?? (status === 'holding' ? `${page}?then=pay` : page));
  });

  router.post('/p/:sku/queue', sameOrigin, formBody, async (ctx) => {
    const buyerId = await signedIn(ctx);
    const { sku } = ctx.params;
    await checkForBots(deps, 'join', { sku, payload: field(ctx, ALTCHA_FIELD), spentBy: joinSpender(sku, buyerId) });
    const joined = await deps.room.join(sku, buyerId);
    if (!joined) throw new Problem(404, 'not-found', 'this sale has no waiting room');
    ctx.status = 303;
    ctx.redirect(`/queue/${encodeURIComponent(joined.view.ticket)}`);
  });

  const devSecret = () => {
    const secret = deps.pages?.devSignInSecret;
    // Production has no sign-in page: the shop's login hands the token over.
    if (!secret) throw new Problem(404, 'not-found', 'there is no sign-in page here: sign in on the shop’s site');
    return { devSignInSecret: secret, secureCookies: deps.pages?.secureCookies ?? false };
  };

  router.get('/sign-in', (ctx) => {
    devSecret();
    send(ctx, 200, signInPage({ next: safeNext(ctx.query.next) }));
  });

  router.post('/sign-in', sameOrigin, formBody, async (ctx) => {
    const pages = devSecret();
    const next = safeNext(field(ctx, 'next'));
    const name = field(ctx, 'name')?.trim() ?? '';
    if (!NAME.test(name)) {
      const error = "Your name: 1 to 64 letters, digits, spaces or . _ ' -, starting with a letter or digit.";
      send(ctx, 400, signInPage({ next, error, name }));
      return;
    }
    await signIn(ctx, pages, name);
    ctx.status = 303;
    ctx.redirect(next);
  });

  router.post('/sign-out', sameOrigin, (ctx) => {
    clearBuyerCookie(ctx);
    ctx.status = 303;
    ctx.redirect('/');
  });

  return router;
}
