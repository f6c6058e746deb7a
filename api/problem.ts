import type Koa from 'koa';
import { requestLog } from './access-log';

/** The problem `type`s of the HTTP contract (docs/openapi.json). Stable: clients branch on them. */
export type ProblemType =
  | 'invalid-request'
  | 'unauthorized'
  | 'forbidden'
  | 'not-found'
  | 'product-exists'
  | 'product-not-found'
  | 'purchase-not-found'
  | 'sold-out'
  | 'hold-exists'
  | 'limit-exceeded'
  | 'not-admitted'
  | 'not-open'
  | 'bot-check-failed'
  | 'ticket-not-found'
  | 'not-cancellable'
  | 'not-refundable'
  | 'bad-signature'
  | 'unavailable'
  | 'method-not-allowed'
  | 'rate-limited'
  | 'payload-too-large'
  | 'not-implemented'
  | 'internal';

const TITLES: Record<ProblemType, string> = {
  'invalid-request': 'The request is invalid',
  unauthorized: 'Missing or wrong bearer token',
  forbidden: 'Not allowed for this caller',
  'not-found': 'No such route',
  'product-exists': 'A product with this SKU already exists',
  'product-not-found': 'No such product',
  'purchase-not-found': 'No such purchase',
  'sold-out': 'Sold out',
  'hold-exists': 'This buyer already holds this item',
  'limit-exceeded': 'Purchase limit exceeded',
  'not-admitted': 'Not admitted by the waiting room',
  'not-open': 'The sale has not opened yet',
  'bot-check-failed': 'The bot check was not passed',
  'ticket-not-found': 'No such waiting-room ticket',
  'not-cancellable': 'This purchase can no longer be cancelled',
  'not-refundable': 'No refund was made',
  'bad-signature': 'The webhook signature does not verify',
  unavailable: 'Temporarily unavailable',
  'method-not-allowed': 'Method not allowed on this route',
  'payload-too-large': 'The request body is too large',
  'not-implemented': 'This method is not implemented',
  internal: 'Internal error',
  'rate-limited': 'Too many requests',
};

/** An RFC 9457 problem. Thrown anywhere in a route, rendered by `problemMiddleware`. */
/** Every problem `type`, as docs/openapi.json's `ProblemType` lists them (test/api/openapi.test.ts). */
export const PROBLEM_TYPES = Object.keys(TITLES) as ProblemType[];

export class Problem extends Error {
  constructor(
    readonly status: number,
    readonly type: ProblemType,
    detail?: string,
    readonly extra: Record<string, unknown> = {},
    readonly headers: Record<string, string> = {},
  ) {
    super(detail ?? TITLES[type]);
  }
}

export function invalid(errors: { field: string; message: string }[]): Problem {
  return new Problem(400, 'invalid-request', errors.map((e) => `${e.field}: ${e.message}`).join('; '), { errors });
}

/** The problem+json body of a problem (also written by api/client-errors.ts, outside Koa). */
export function problemBody(p: Problem): Record<string, unknown> {
  return { type: p.type, title: TITLES[p.type], status: p.status, detail: p.message, ...p.extra };
}

/** A body that was too large to read: 413, saying the limit. */
/**
 * A body past the route's limit. The rest of it is never read: the connection closes once the answer
 * is sent, so a sender of an endless body cannot keep it (and a share of the CPU) until the timeout.
 */
export function tooLarge(limit: number): Problem {
  return new Problem(
    413,
    'payload-too-large',
    `the body is larger than this route accepts (${limit} bytes)`,
    { limit },
    { Connection: 'close' },
  );
}

/** An error thrown by a library (http-errors: body parsing, routing) as the problem it stands for. */
function fromHttpError(err: unknown): Problem | undefined {
  const e = err as { status?: unknown; expose?: unknown; message?: unknown; limit?: unknown };
  if (typeof e.status !== 'number' || e.status < 400 || e.status >= 500) return undefined;
  if (e.status === 413) return tooLarge(typeof e.limit === 'number' ? e.limit : 0);
  const message = e.expose && typeof e.message === 'string' ? e.message : 'is invalid';
  return new Problem(400, 'invalid-request', `body: ${message}`, { errors: [{ field: 'body', message }] });
}

/** Any error as the problem the client is told: a Problem as it is, a library's 4xx as 400, anything else 500 (logged). */
export function asProblem(err: unknown, ctx: Koa.Context): Problem {
  const p = err instanceof Problem ? err : fromHttpError(err);
  if (p) return p;
  requestLog(ctx).error({ err }, `${ctx.method} ${ctx.path} failed`);
  return new Problem(500, 'internal', 'an internal error occurred; it has been logged');
}

/**
 * Renders every error as application/problem+json, and the answers Koa and the routers leave
 * without a body (404, 405, 501) as problems too; a 5xx never shows its internals to the client.
 */
export function problemMiddleware(): Koa.Middleware {
  return async (ctx, next) => {
    try {
      await next();
      if (ctx.status === 404 && ctx.body === undefined)
        throw new Problem(404, 'not-found', `no route for ${ctx.method} ${ctx.path}`);
      if (ctx.status === 405 && !ctx.body) {
        throw new Problem(
          405,
          'method-not-allowed',
          `${ctx.method} is not allowed on ${ctx.path}`,
          {},
          { Allow: ctx.response.get('Allow') },
        );
      }
      if (ctx.status === 501 && !ctx.body)
        throw new Problem(501, 'not-implemented', `${ctx.method} is not implemented`);
    } catch (err) {
      const p = asProblem(err, ctx);
      ctx.status = p.status;
      ctx.set(p.headers);
      ctx.type = 'application/problem+json';
      ctx.body = problemBody(p);
    }
  };
}
