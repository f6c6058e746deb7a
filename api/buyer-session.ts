import type Koa from 'koa';
import { BadBuyerToken, BuyerKeysUnavailable, signBuyerToken } from '../config/buyer-tokens';
import { keysUnavailable } from './auth';
import type { ApiDeps } from './deps';
import { Problem } from './problem';

// Who is looking at a buyer page: the buyer token (the same JWT the JSON API takes as a bearer
// token) carried in an HttpOnly, SameSite=Lax cookie. Lax, not Strict: the buyer comes back from
// Checkout by a top-level navigation from another site (checkout.stripe.com), and must still be
// signed in there. Forms are posted only from our own origin (checkSameOrigin): with the cookie's
// SameSite, that is the CSRF defence.

/** The cookie that holds the buyer token. */
export const BUYER_COOKIE = 'buyer_token';
/** How long a token made by the development sign-in lives. */
export const DEV_SESSION_SECONDS = 8 * 3600;

/** The signed-in buyer, or undefined when there is no cookie; a cookie that does not verify is 401. */
export async function pageBuyer(ctx: Koa.Context, deps: Pick<ApiDeps, 'buyers'>): Promise<string | undefined> {
  const token = ctx.cookies.get(BUYER_COOKIE);
  if (!token) return undefined;
  try {
    return await deps.buyers.verify(token);
  } catch (err) {
    // The key set out of reach: the sign-in may be good, so it is kept.
    if (err instanceof BuyerKeysUnavailable) throw keysUnavailable(err);
    if (!(err instanceof BadBuyerToken)) throw err;
    // Forget it, so the next page is simply signed out.
    clearBuyerCookie(ctx);
    throw new Problem(401, 'unauthorized', 'your sign-in is not valid (it may have expired): sign in again');
  }
}

function cookie(ctx: Koa.Context, value: string, maxAge: number, secure: boolean): void {
  // Written by hand: koa's cookies refuse `Secure` on a plain-HTTP hop behind a TLS proxy.
  const attrs = [`${BUYER_COOKIE}=${value}`, 'Path=/', `Max-Age=${maxAge}`, 'HttpOnly', 'SameSite=Lax'];
  if (secure) attrs.push('Secure');
  ctx.append('Set-Cookie', attrs.join('; '));
}

export function setBuyerCookie(ctx: Koa.Context, token: string, maxAgeSeconds: number, secure: boolean): void {
  cookie(ctx, token, Math.max(0, Math.floor(maxAgeSeconds)), secure);
}

export function clearBuyerCookie(ctx: Koa.Context): void {
  cookie(ctx, '', 0, false);
}

/** The development sign-in: a token for `buyerId`, signed with the dev secret, set as the cookie. */
export async function signIn(
  ctx: Koa.Context,
  pages: { devSignInSecret: string; secureCookies: boolean },
  buyerId: string,
) {
  const token = await signBuyerToken(pages.devSignInSecret, buyerId, { ttlSeconds: DEV_SESSION_SECONDS });
  setBuyerCookie(ctx, token, DEV_SESSION_SECONDS, pages.secureCookies);
}

/**
 * CSRF: a form must come from our own pages. Browsers send `Origin` on every POST (and
 * `Sec-Fetch-Site`); one of them must say same origin. A request with neither is refused too: only
 * a script could send it, and scripts use the JSON API.
 */
export function checkSameOrigin(ctx: Koa.Context, publicOrigin?: string): void {
  const origin = ctx.get('origin');
  // Koa 3's ctx.origin is the Origin header itself: the request's own origin is built from Host.
  const allowed = [`${ctx.protocol}://${ctx.host}`, ...(publicOrigin ? [publicOrigin] : [])];
  if (origin) {
    if (allowed.includes(origin)) return;
  } else if (ctx.get('sec-fetch-site') === 'same-origin') return;
  throw new Problem(403, 'forbidden', 'this form was not sent from this site’s own pages; open the page and try again');
}

/** Where to go after signing in: a path on this site only (never `//host` or a full URL). */
export function safeNext(next: unknown): string {
  return typeof next === 'string' && /^\/(?![/\\])[^\s]*$/.test(next) && next.length <= 512 ? next : '/';
}
