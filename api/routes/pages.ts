import { Router } from '@koa/router';

// The page Stripe sends the buyer back to after the Checkout (success_url and cancel_url). Public and
// static: it tells the buyer what happens next and shows nothing of the purchase (its state is for its
// buyer's token, GET /v1/purchases/:id). The buyer's pages of the waiting room come later.

const escape = (s: string) =>
  s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);

export function pageRoutes(): Router {
  const router = new Router();
  router.get('/checkout/return/:id', (ctx) => {
    const id = escape(ctx.params.id);
    const left = ctx.query.result === 'cancel';
    const title = left ? 'Checkout left' : 'Thank you';
    const text = left
      ? 'You left the checkout. Your item stays reserved until the hold ends; you may go back to pay before then.'
      : 'Your payment is being confirmed. You will be told as soon as it is: a payment that arrives after your hold ended is refunded in full if the item is gone.';
    ctx.type = 'text/html; charset=utf-8';
    ctx.set('Cache-Control', 'no-store');
    ctx.body = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>${title}</title></head>
<body><main><h1>${title}</h1><p>${text}</p><p>Purchase <code id="purchase">${id}</code></p></main></body></html>
`;
  });
  return router;
}
