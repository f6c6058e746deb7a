import type { IncomingMessage } from 'node:http';
import { bodyParser } from '@koa/bodyparser';
import type Koa from 'koa';
import { inspectJson } from './json-guard';
import { invalid, type Problem, tooLarge } from './problem';

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

/** A body the client stopped sending before its end: its error, never an outage of ours (400, logged at info). */
function cutOff(): Problem {
  return invalid([
    { field: 'body', message: 'was cut off: the client closed the connection before sending all of it' },
  ]);
}

/**
 * The exact bytes of a request's body (a route that verifies them, the webhook), at most `limit`:
 * 413 when Content-Length says more up front or a chunked body runs past it, 400 when the client
 * cuts it off. The request is never destroyed here (that would take its socket from under the
 * answer): past the limit it is left flowing, Node discards the rest, and the connection closes
 * once the 413 is sent (its `Connection: close`).
 */
export function readRawBody(req: IncomingMessage, limit: number): Promise<Buffer> {
  if (Number(req.headers['content-length'] || 0) > limit) return Promise.reject(tooLarge(limit));
  // Cut off while an earlier step ran: its `close` has been and gone.
  if (req.destroyed && !req.complete) return Promise.reject(cutOff());
  // Read already (by a parser that should have skipped it): its `end` has been and gone, and waiting
  // for it would never answer.
  if (req.readableEnded) {
    return Promise.reject(invalid([{ field: 'body', message: 'was read before its route: it cannot be verified' }]));
  }
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const settle = (err?: Problem) => {
      req.off('data', onData).off('end', onEnd).off('error', onCut).off('close', onClose);
      if (err) reject(err);
      else resolve(Buffer.concat(chunks));
    };
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) settle(tooLarge(limit));
      else chunks.push(chunk);
    };
    const onEnd = () => settle();
    const onCut = () => settle(cutOff());
    const onClose = () => {
      if (!req.complete) settle(cutOff());
    };
    req.on('data', onData).on('end', onEnd).on('error', onCut).on('close', onClose);
  });
}

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
