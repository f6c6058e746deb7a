import { Router } from '@koa/router';
import type Koa from 'koa';

import { readText } from './body';
import { Problem } from './errors';
import type { CheckoutSession, LineItem } from './objects';
import type { PaymentMethodType } from './common-types';
import { DELAYED_TYPES, isPaymentMethodType } from './payment-methods';
import { checkoutPageUrl } from './sessions';
import { readShippingForm, shippingFields } from './shipping';
import { type EmulatorStore, PAY_OUTCOMES, type PayOutcome, formatMoney } from './store';

/**
 * The hosted checkout page a buyer is sent to (`session.url`). Its forms post the buyer's choice to
 * `/checkout/:id/pay`, which applies it like `POST /_emulator/sessions/:id/pay` and then redirects:
 * to `success_url` after a payment, back to the page (with the decline shown) after a decline.
 */
export function checkoutPageRoutes(store: EmulatorStore): Router {
  const router = new Router();

  router.get('/checkout/:id', (ctx) => {
    const session = store.findSession(ctx.params.id);
    if (!session) {
      renderHtml(ctx, 404, layout('Checkout not found', notFound(ctx.params.id)));
      return;
    }
    const notice = ctx.query.declined ? 'Your card was declined. Try again, or use another payment method.' : null;
    renderHtml(ctx, 200, sessionPage(store, session, notice));
  });

  router.post('/checkout/:id/pay', async (ctx) => {
    const form = new URLSearchParams(await readText(ctx.req, 64 * 1024));
    const outcome = form.get('outcome') ?? '';
    const id = ctx.params.id;
    if (!(PAY_OUTCOMES as readonly string[]).includes(outcome)) {
      renderHtml(ctx, 400, layout('Checkout', `<p class="banner error">Unknown outcome ${escapeHtml(outcome)}.</p>`));
      return;
    }
    // The bank debit and Link buttons name their method in their formaction; the others pay by card.
    const method = isPaymentMethodType(ctx.query.method) ? ctx.query.method : undefined;
    let session: CheckoutSession;
    try {
      // The address the buyer typed goes with a payment that completes the session (a decline keeps it open).
      const completes = outcome === 'succeeded' || outcome === 'async_pending';
      const shipping = completes ? (readShippingForm(form) ?? undefined) : undefined;
      session = store.pay(id, outcome as PayOutcome, {
        ...(shipping ? { shipping } : {}),
        ...(method ? { paymentMethod: { type: method } } : {}),
      });
    } catch (error) {
      if (!(error instanceof Problem)) throw error;
      const existing = store.findSession(id);
      const body = existing ? sessionPage(store, existing, error.detail) : notFound(id);
      renderHtml(ctx, error.status, existing ? body : layout('Checkout not found', body));
      return;
    }
    ctx.status = 303;
    if (outcome === 'declined') ctx.redirect(`${checkoutPageUrl('', encodeURIComponent(id))}?declined=1`);
    else if ((outcome === 'succeeded' || outcome === 'async_pending') && session.success_url) {
      ctx.redirect(session.success_url.replace(/\{CHECKOUT_SESSION_ID\}/g, session.id));
    } else ctx.redirect(checkoutPageUrl('', encodeURIComponent(id)));
  });

  return router;
}

function renderHtml(ctx: Koa.Context, status: number, html: string): void {
  ctx.status = status;
  ctx.type = 'text/html; charset=utf-8';
  ctx.set('Cache-Control', 'no-store');
  ctx.body = html;
}

export function escapeHtml(value: string): string {
  return value.replace(
    /[&<>"']/g,
    (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c] as string,
  );
}

function sessionPage(store: EmulatorStore, session: CheckoutSession, notice: string | null): string {
  const items = store.getLineItems(session.id);
  const total = formatMoney(session.amount_total, session.currency);
  const title = items.length === 1 ? items[0].description : `${items.length} items`;
  const back = session.cancel_url
    ? `<a class="back" href="${escapeHtml(session.cancel_url)}" id="cancel">&larr; Back to the shop</a>`
    : '';
  const summary = `
    <section class="summary">
      ${back}
      <p class="muted">Pay Flash Sale (test mode)</p>
      <p class="total" id="amount">${escapeHtml(total)}</p>
      <ul class="items">${items.map(itemRow).join('')}</ul>
    </section>`;
  return layout(
    `Checkout · ${title}`,
    `${summary}<section class="pay">${payPanel(store, session, total, notice)}</section>`,
  );
}

function itemRow(item: LineItem): string {
  return `<li><span class="name">${escapeHtml(item.description)}</span>
    <span class="qty">Qty ${item.quantity} × ${escapeHtml(formatMoney(item.price.unit_amount, item.currency))}</span>
    <span class="amount">${escapeHtml(formatMoney(item.amount_total, item.currency))}</span></li>`;
}

function payPanel(store: EmulatorStore, session: CheckoutSession, total: string, notice: string | null): string {
  const banner = notice ? `<p class="banner error" role="alert" id="notice">${escapeHtml(notice)}</p>` : '';
  const action = `/checkout/${encodeURIComponent(session.id)}/pay`;
  const expiresAt = new Date(session.expires_at * 1000);
  if (session.status === 'expired') {
    return `${banner}<h1 id="status" data-status="expired">This checkout session has expired</h1>
      <p class="muted">It expired at ${escapeHtml(expiresAt.toUTCString())}. Return to the shop to start again.</p>`;
  }
  if (session.status === 'complete' && session.payment_status === 'paid') {
    return `${banner}<h1 id="status" data-status="paid">Payment complete</h1>
      <p class="muted">Thanks! ${escapeHtml(total)} was paid.</p>${successLink(session)}`;
  }
  if (session.status === 'complete') {
    return `${banner}<h1 id="status" data-status="processing">Payment processing</h1>
      <p class="muted">Your bank debit of ${escapeHtml(total)} is on its way; the shop will confirm it when it settles.</p>
      ${successLink(session)}
      <form method="post" action="${action}" class="emulator">
        <p class="muted">Emulator controls: settle the delayed payment.</p>
        <button type="submit" name="outcome" value="async_succeeded" id="settle-succeeded" class="secondary">Settle: succeeded</button>
        <button type="submit" name="outcome" value="async_failed" id="settle-failed" class="secondary">Settle: failed</button>
      </form>`;
  }
  const minutes = Math.max(0, Math.round((session.expires_at - store.nowSeconds()) / 60));
  return `${banner}<h1 id="status" data-status="open">Pay with card</h1>
    <form method="post" action="${action}">
      <label>Email<input type="email" value="${escapeHtml(session.customer_email ?? 'buyer@example.com')}" readonly></label>
      ${shippingFields(session)}
      <label>Card information<input value="4242 4242 4242 4242   12 / 34   123" readonly></label>
      ${session.custom_text.submit ? `<p id="submit-message">${escapeHtml(session.custom_text.submit.message)}</p>` : ''}
      <button type="submit" name="outcome" value="succeeded" id="pay" class="primary">Pay ${escapeHtml(total)}</button>
      <button type="submit" name="outcome" value="declined" id="decline" class="secondary" formnovalidate>Decline (card declined)</button>
      ${otherMethodButtons(session, action)}
    </form>
    <p class="muted" id="expires">This session expires at ${escapeHtml(expiresAt.toUTCString())} (in about ${minutes} min).</p>`;
}

const DEBIT_NAMES: Partial<Record<PaymentMethodType, string>> = {
  sepa_debit: 'SEPA Direct Debit',
  bacs_debit: 'Bacs Direct Debit',
  us_bank_account: 'US bank account (ACH)',
};

/**
 * Link, and the bank debit the session offers in its currency; a session that offers none keeps the
 * delayed card payment the page had before bank debits existed.
 */
function otherMethodButtons(session: CheckoutSession, action: string): string {
  const offered = session.payment_method_types;
  const debit = DELAYED_TYPES.find((type) => offered.includes(type));
  const link = offered.includes('link')
    ? `<button type="submit" name="outcome" value="succeeded" id="pay-link" class="secondary" formaction="${action}?method=link">Pay with Link</button>`
    : '';
  const delayed = debit
    ? `<button type="submit" name="outcome" value="async_pending" id="pay-async" class="secondary" formaction="${action}?method=${debit}">Pay by ${escapeHtml(DEBIT_NAMES[debit] ?? debit)} (settles later)</button>`
    : '<button type="submit" name="outcome" value="async_pending" id="pay-async" class="secondary">Pay by card, settling later</button>';
  return link + delayed;
}

function successLink(session: CheckoutSession): string {
  if (!session.success_url) return '';
  const href = session.success_url.replace(/\{CHECKOUT_SESSION_ID\}/g, session.id);
  return `<p><a href="${escapeHtml(href)}" id="continue">Continue to the shop &rarr;</a></p>`;
}

function notFound(id: string): string {
  return `<section class="pay"><h1 id="status" data-status="missing">Checkout not found</h1>
    <p class="muted">No checkout session ${escapeHtml(id)} exists on this payments emulator.</p></section>`;
}

function layout(title: string, body: string): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)}</title>
<style>
  :root { font-family: system-ui, -apple-system, 'Segoe UI', sans-serif; color: #1a1f36; background: #f6f9fc; }
  body { margin: 0; min-height: 100vh; display: flex; align-items: center; justify-content: center; }
  main { display: flex; flex-wrap: wrap; gap: 48px; max-width: 880px; padding: 40px; background: #fff;
         border-radius: 12px; box-shadow: 0 6px 24px rgba(50, 50, 93, 0.12); }
  section { flex: 1 1 320px; }
  .summary .total { font-size: 36px; font-weight: 600; margin: 4px 0 24px; }
  .items { list-style: none; padding: 0; margin: 0; }
  .items li { display: grid; grid-template-columns: 1fr auto; gap: 2px 12px; padding: 12px 0; border-top: 1px solid #e3e8ee; }
  .items .qty { color: #697386; font-size: 14px; }
  .items .amount { grid-row: 1; grid-column: 2; font-weight: 500; }
  h1 { font-size: 20px; margin: 0 0 16px; }
  label { display: block; font-size: 14px; color: #3c4257; margin-bottom: 12px; }
  input { display: block; width: 100%; box-sizing: border-box; margin-top: 4px; padding: 10px 12px;
          border: 1px solid #e0e6eb; border-radius: 6px; font-size: 15px; background: #fafbfc; }
  button { display: block; width: 100%; margin-top: 12px; padding: 12px; border-radius: 6px; font-size: 16px;
           cursor: pointer; border: 1px solid #0a2540; }
  button.primary { background: #635bff; border-color: #635bff; color: #fff; font-weight: 600; }
  button.secondary { background: #fff; color: #0a2540; }
  .muted { color: #697386; font-size: 14px; }
  .back { color: #697386; text-decoration: none; font-size: 14px; }
  .banner { padding: 10px 12px; border-radius: 6px; }
  .banner.error { background: #fde8e8; color: #9b1c1c; }
  .emulator { margin-top: 24px; padding-top: 12px; border-top: 1px dashed #e3e8ee; }
  .badge { display: inline-block; padding: 2px 8px; border-radius: 4px; background: #ffde92; color: #5c3b00;
           font-size: 12px; font-weight: 600; margin-bottom: 8px; }
</style>
</head>
<body>
<main><div style="flex-basis: 100%"><span class="badge">TEST MODE · payments emulator</span></div>${body}</main>
</body>
</html>
`;
}
