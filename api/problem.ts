import type Koa from 'koa';

/** The problem `type`s of the HTTP contract (docs/openapi.json). Stable: clients branch on them. */
export type ProblemType =
  | 'invalid-request'
  | 'unauthorized'
  | 'not-found'
  | 'product-exists'
  | 'product-not-found'
  | 'purchase-not-found'
  | 'sold-out'
  | 'hold-exists'
  | 'limit-exceeded'
  | 'not-admitted'
  | 'not-cancellable'
  | 'not-refundable'
  | 'bad-signature'
  | 'unavailable'
  | 'method-not-allowed'
  | 'internal';

const TITLES: Record<ProblemType, string> = {
  'invalid-request': 'The request is invalid',
  unauthorized: 'Missing or wrong bearer token',
  'not-found': 'No such route',
  'product-exists': 'A product with this SKU already exists',
  'product-not-found': 'No such product',
  'purchase-not-found': 'No such purchase',
  'sold-out': 'Sold out',
  'hold-exists': 'This buyer already holds this item',
  'limit-exceeded': 'Per-buyer limit exceeded',
  'not-admitted': 'Not admitted by the waiting room',
  'not-cancellable': 'This purchase can no longer be cancelled',
  'not-refundable': 'This purchase cannot be refunded',
  'bad-signature': 'The webhook signature does not verify',
  unavailable: 'Temporarily unavailable',
  'method-not-allowed': 'Method not allowed on this route',
  internal: 'Internal error',
};

/** An RFC 9457 problem. Thrown anywhere in a route, rendered by `problemMiddleware`. */
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

/** Renders every error as application/problem+json; a 5xx never shows its internals to the client. */
export function problemMiddleware(log: (msg: string, err: unknown) => void): Koa.Middleware {
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
          {
            Allow: ctx.response.get('Allow'),
          },
        );
      }
    } catch (err) {
      let p: Problem;
      if (err instanceof Problem) p = err;
      else if ((err as { status?: number }).status === 413 || (err as { type?: string }).type === 'entity.too.large') {
        p = new Problem(400, 'invalid-request', 'body: too large');
      } else if ((err as { status?: number }).status === 400 && (err as { expose?: boolean }).expose) {
        p = new Problem(400, 'invalid-request', `body: ${(err as Error).message}`);
      } else {
        log(`${ctx.method} ${ctx.path} failed`, err);
        p = new Problem(500, 'internal', 'an internal error occurred; it has been logged');
      }
      ctx.status = p.status;
      ctx.set(p.headers);
      ctx.type = 'application/problem+json';
      ctx.body = { type: p.type, title: TITLES[p.type], status: p.status, detail: p.message, ...p.extra };
    }
  };
}
