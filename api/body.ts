import { bodyParser } from '@koa/bodyparser';
import type Koa from 'koa';
import { inspectJson } from './json-guard';
import { invalid, tooLarge } from './problem';

// JSON request bodies: read with a size limit, parsed, and refused (400) when they nest deeper than
// the contract ever does, before any route sees them. Strings are checked by each route's
// validator (api/validate.ts), which knows the fields it sanitises instead.

/** Every body but a new product's: the largest of them (a support reason) is a few kilobytes. */
export const JSON_LIMIT = 64 * 1024;

/**
 * A new product's body: room for 100,000 unit ids of up to 64 ASCII characters (about 6.7 MB).
 * Read only once the admin token was checked, so nobody else can make the API read that much.
 */
export const LARGE_JSON_LIMIT = 8 * 1024 * 1024;

const JSON_TYPES = ['application/json'];

function parser(limit: number): Koa.Middleware {
  return bodyParser({
    enableTypes: ['json'],
    jsonLimit: limit,
    encoding: 'utf-8',
    onError: (err) => {
      const e = err as { status?: number; type?: string; message: string };
      if (e.status === 413 || e.type === 'entity.too.large') throw tooLarge(limit);
      if (e.status === 415) throw invalid([{ field: 'Content-Type', message: e.message }]);
      throw invalid([{ field: 'body', message: e.message }]);
    },
  });
}

/** Whether the request carries a body (Content-Length above 0, or chunked). */
function hasBody(ctx: Koa.Context): boolean {
  return ctx.get('transfer-encoding') !== '' || Number(ctx.get('content-length') || 0) > 0;
}

/**
 * Parses JSON bodies of POST, PUT and PATCH. `large(ctx)` names the requests allowed
 * LARGE_JSON_LIMIT, `before` runs ahead of reading those (the admin check); `skip(ctx)` those that
 * read their raw body themselves (the webhook). A body sent as anything but JSON is 400 naming
 * `Content-Type`, beyond the limit 413 `payload-too-large`, deeper than MAX_JSON_DEPTH 400.
 */
export function jsonBodies(opts: {
  large: (ctx: Koa.Context) => boolean;
  before: Koa.Middleware;
  skip: (ctx: Koa.Context) => boolean;
}): Koa.Middleware {
  const small = parser(JSON_LIMIT);
  const big = parser(LARGE_JSON_LIMIT);
  const depth: Koa.Middleware = async (ctx, next) => {
    const faults = inspectJson(ctx.request.body, { depthOnly: true });
    if (faults.length > 0) throw invalid(faults);
    await next();
  };
  return async (ctx, next) => {
    if (opts.skip(ctx) || !['POST', 'PUT', 'PATCH'].includes(ctx.method)) {
      await next();
      return;
    }
    if (hasBody(ctx) && !ctx.is(JSON_TYPES)) {
      throw invalid([{ field: 'Content-Type', message: 'must be application/json' }]);
    }
    const parsed = async () => {
      await depth(ctx, next);
    };
    if (!opts.large(ctx)) await small(ctx, parsed);
    else
      await opts.before(ctx, async () => {
        await big(ctx, parsed);
      });
  };
}
