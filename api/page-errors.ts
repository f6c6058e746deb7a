import type Koa from 'koa';
import { noticePage, type Notice } from '../web/notice';
import { pageBuyer } from './buyer-session';
import type { ApiDeps } from './deps';
import { isPagePath } from './page-paths';
import { asProblem, type Problem } from './problem';

// The buyer's pages answer refusals and errors as HTML pages in words, with the status code (and
// headers, Retry-After) the JSON API would give. The JSON routes keep their problem+json.

const PAGE_METHODS = ['GET', 'HEAD', 'POST'];

function retryAfter(p: Problem): number | undefined {
  const s = Number(p.headers['Retry-After']);
  return Number.isFinite(s) && s > 0 ? s : undefined;
}

/** The Buy form's fields as the buyer knows them (the form's labels). */
const FIELD_NAMES: Record<string, string> = {
  quantity: 'The quantity',
  idempotencyKey: 'The form itself (reload the product page and try again): its key',
  'Idempotency-Key': 'The form itself (reload the product page and try again): its key',
};

/** A bad form's problems as sentences: "The quantity must be a whole number." */
function formWords(errors: { field: string; message: string }[] | undefined): string | undefined {
  if (!errors?.length || !errors.every((e) => FIELD_NAMES[e.field])) return undefined;
  return errors
    .map((e) => `${FIELD_NAMES[e.field]} ${e.message.replace(/\s*\(reload the product page\)$/, '')}.`)
    .join(' ');
}

/** What a per-purchase cap is per, by the product term that sets it (store/rules/). */
const PER: Record<string, string> = {
  maxPerAddress: 'shipping address',
  maxPerCard: 'card or bank account',
};

/** A limit-exceeded refusal in words, naming the limit when the problem does (`limit`, `maxQuantity`). */
function limitWords(extra: { limit?: string; maxQuantity?: number }): string {
  const most = extra.maxQuantity;
  if (extra.limit && PER[extra.limit] && most) {
    return `One purchase of this product may take at most ${most}: it is limited to ${most} per ${PER[extra.limit]}. Choose ${most === 1 ? '1' : `${most} or fewer`}.`;
  }
  const upTo = extra.limit === 'maxPerBuyer' && most ? `at most ${most}` : 'only a limited number';
  return `Each buyer may buy ${upTo} of this product, counting what you have already bought or reserved: the product page says how many. Choose fewer, or finish the purchase you have.`;
}

/** A problem in the buyer's words. */
export function noticeOf(p: Problem, signInHref?: string): Notice {
  const extra = p.extra as { final?: boolean; heldBy?: string; maxQuantity?: number; errors?: { field: string }[] };
  const home = { href: '/', text: 'See what is on sale' };
  const base = { kind: p.type, links: [home] };
  switch (p.type) {
    case 'not-found':
      return { ...base, title: 'Not found', message: `There is nothing here: ${p.message}.` };
    case 'product-not-found':
      return { ...base, title: 'No such product', message: 'There is no product at this address.' };
    case 'purchase-not-found':
      return {
        ...base,
        title: 'No such purchase',
        message:
          'There is no purchase of yours at this address. If you bought it under another name, sign in as that buyer.',
        ...(signInHref ? { links: [{ href: signInHref, text: 'Sign in' }, home] } : {}),
      };
    case 'sold-out':
      return extra.final === false
        ? {
            ...base,
            title: 'Sold out for now',
            message:
              'Every one is sold or held by another buyer right now. Held items come back when their buyer does not pay in time.',
            retryAfterSeconds: retryAfter(p),
          }
        : typeof extra.maxQuantity === 'number'
          ? {
              ...base,
              title: `Only ${extra.maxQuantity} left`,
              message: `There are fewer left than you asked for: choose at most ${extra.maxQuantity}.`,
            }
          : { ...base, title: 'Sold out', message: 'Sorry, this product is sold out.' };
    case 'not-open':
      return {
        ...base,
        title: 'Not on sale yet',
        message: `The sale opens at ${String((p.extra as { opensAt?: string }).opensAt ?? 'its opening time')}.`,
        retryAfterSeconds: retryAfter(p),
      };
    case 'hold-exists':
      return {
        ...base,
        title: 'You already have one reserved',
        message:
          'You already hold this product in another purchase: pay for it there, or let its reservation end before you buy again.',
        links: extra.heldBy
          ? [{ href: `/purchases/${encodeURIComponent(extra.heldBy)}`, text: 'Your reserved purchase' }, home]
          : [home],
      };
    case 'limit-exceeded':
      return { ...base, title: 'That is more than you may buy', message: limitWords(p.extra) };
    case 'not-admitted':
      return {
        ...base,
        title: 'Wait for your turn',
        message: 'This sale has a waiting room: join the queue and buy when it is your turn.',
      };
    case 'bot-check-failed':
      return {
        ...base,
        title: 'The check that you are not a bot did not pass',
        message:
          (p.extra as { reason?: string }).reason === 'missing'
            ? 'This sale checks that each buyer is a person: your browser solves a small puzzle before Buy or Join the queue, which needs JavaScript. Turn JavaScript on for this site, go back and try again.'
            : `This sale checks that each buyer is a person, and that check did not pass (${p.message}). Go back, let the check finish, and try again.`,
      };
    case 'invalid-request':
      return {
        ...base,
        title: 'Something in the form is not right',
        message: formWords(extra.errors as { field: string; message: string }[] | undefined) ?? p.message,
        fields: extra.errors?.map((e) => e.field),
      };
    case 'unauthorized':
      return {
        ...base,
        title: 'Please sign in',
        message: p.message.startsWith('your sign-in')
          ? `Your sign-in is not valid (it may have expired). Sign in again.`
          : 'Sign in to see this page.',
        ...(signInHref ? { links: [{ href: signInHref, text: 'Sign in' }, home] } : {}),
      };
    case 'forbidden':
      return { ...base, title: 'Not allowed', message: p.message };
    case 'rate-limited':
      return { ...base, title: 'Too many attempts', message: 'Please slow down.', retryAfterSeconds: retryAfter(p) };
    case 'unavailable':
      return {
        ...base,
        title: 'Busy right now',
        message: 'We could not finish this just now. Nothing was bought twice: try again.',
        retryAfterSeconds: retryAfter(p),
      };
    default:
      return {
        ...base,
        title: 'Something went wrong',
        message: p.status >= 500 ? 'Something went wrong on our side. Please try again.' : p.message,
      };
  }
}

/** The product page a form was on (`/p/:sku/buy` → `/p/:sku`): the way forward from its refusal. */
const productPath = (path: string) => /^\/p\/[^/]+/.exec(path)?.[0];

/** Renders every error of a page path as an HTML page (status and headers of its problem kept). */
export function pageErrors(deps: Pick<ApiDeps, 'pages' | 'buyers'>): Koa.Middleware {
  return async (ctx, next) => {
    // Only what a browser sends a page: any other method is the API's answer (405, 501 as problems).
    if (!isPagePath(ctx.path) || !PAGE_METHODS.includes(ctx.method)) {
      await next();
      return;
    }
    try {
      await next();
    } catch (err) {
      const p = asProblem(err, ctx);
      // After signing in, back to the page (a form's page: /p/:sku for /p/:sku/buy).
      const back = ctx.method === 'GET' ? ctx.path : ctx.path.replace(/\/(?:buy|queue)$/, '');
      const signInHref = deps.pages?.devSignInSecret ? `/sign-in?next=${encodeURIComponent(back)}` : undefined;
      ctx.status = p.status;
      ctx.set(p.headers);
      ctx.set('Cache-Control', 'no-store');
      ctx.type = 'text/html; charset=utf-8';
      // A page read refused for now (the page limit, a busy service) loads itself again when it may:
      // a buyer on the queue page keeps their place without pressing anything.
      const reload = ctx.method === 'GET' && (p.type === 'rate-limited' || p.type === 'unavailable');
      const notice = noticeOf(p, signInHref);
      // A refused form leads back to its product (a fresh form, the rules, what is left).
      const product = ctx.method === 'POST' ? productPath(ctx.path) : undefined;
      if (product) notice.links = [{ href: product, text: 'Back to the product' }, ...(notice.links ?? [])];
      // Worth trying again later (sold out for now): the page goes back to the product by itself then.
      if (product && notice.retryAfterSeconds !== undefined) notice.thenGoTo = product;
      // The header keeps who is signed in (a refusal of the sign-in itself has no buyer to show).
      const buyer = p.type === 'unauthorized' ? undefined : await pageBuyer(ctx, deps).catch(() => undefined);
      ctx.body = noticePage({ ...notice, reload }, buyer ? { buyer } : {});
    }
  };
}
