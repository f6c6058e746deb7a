import { timingSafeEqual } from 'node:crypto';
import type Koa from 'koa';
import { BadBuyerToken, BuyerKeysUnavailable, type BuyerVerifier } from '../config/buyer-tokens';
import { Problem } from './problem';

function same(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

// The scheme's name is case-insensitive (RFC 9110, 11.1).
const bearerOf = (ctx: Koa.Context): string => /^bearer +(.*)$/i.exec(ctx.get('authorization'))?.[1]?.trim() ?? '';

/** 503 for a buyer token that could not be checked: the identity provider's key set is out of reach. */
export const keysUnavailable = (err: BuyerKeysUnavailable): Problem =>
  new Problem(
    503,
    'unavailable',
    `buyer tokens cannot be checked now (the sign-in key set is out of reach: ${err.message}); try again`,
    {},
    { 'Retry-After': '5' },
  );

/** Requires `Authorization: Bearer <token>`; 401 `unauthorized` otherwise. */
export function requireBearer(token: string, realm: string): Koa.Middleware {
  return async (ctx, next) => {
    const given = bearerOf(ctx);
    if (!token || !given || !same(given, token)) {
      throw new Problem(
        401,
        'unauthorized',
        `this route needs the ${realm} bearer token`,
        {},
        {
          'WWW-Authenticate': `Bearer realm="${realm}"`,
        },
      );
    }
    await next();
  };
}

const noBuyer = (why: string) =>
  new Problem(
    401,
    'unauthorized',
    `this route needs a buyer token: ${why}`,
    {},
    { 'WWW-Authenticate': 'Bearer realm="buyer"' },
  );

/** The buyer calling a buyer route: the `sub` of a valid buyer token; 401 `unauthorized` otherwise. */
export async function buyerOf(ctx: Koa.Context, buyers: BuyerVerifier): Promise<string> {
  const token = bearerOf(ctx);
  if (!token) throw noBuyer('no Authorization: Bearer header');
  try {
    return await buyers.verify(token);
  } catch (err) {
    if (err instanceof BadBuyerToken) throw noBuyer(err.message);
    if (err instanceof BuyerKeysUnavailable) throw keysUnavailable(err);
    throw err;
  }
}

/** Who reads a buyer's purchase: that buyer (by token) or support (by the support token). */
export async function readerOf(
  ctx: Koa.Context,
  deps: { buyers: BuyerVerifier; supportToken: string },
): Promise<{ support: true } | { support: false; buyerId: string }> {
  const token = bearerOf(ctx);
  if (token && deps.supportToken && same(token, deps.supportToken)) return { support: true };
  return { support: false, buyerId: await buyerOf(ctx, deps.buyers) };
}
