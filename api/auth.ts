import { timingSafeEqual } from 'node:crypto';
import type Koa from 'koa';
import { Problem } from './problem';

function same(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

/** Requires `Authorization: Bearer <token>`; 401 `unauthorized` otherwise. */
export function requireBearer(token: string, realm: string): Koa.Middleware {
  return async (ctx, next) => {
    const header = ctx.get('authorization');
    const given = header.startsWith('Bearer ') ? header.slice(7) : '';
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
