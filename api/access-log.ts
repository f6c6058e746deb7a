import { randomUUID } from 'node:crypto';
import type Koa from 'koa';
import type { Logger } from '../config/log';
import type { Metrics } from './metrics';

// The outermost middleware: a request id for every request, one access-log line when it is
// answered, and the HTTP duration histogram. Everything the request logs afterwards (a 500, an
// outage, a saga that could not be reached) goes through `requestLog(ctx)`, with the same id; a
// purchase's saga carries it on into the worker's lines (PurchaseInput.requestId).

export const REQUEST_ID_HEADER = 'X-Request-Id';
/** A caller's id is kept when it is this short and plain (a UUID, a trace id, a load balancer's id). */
const VALID_REQUEST_ID = /^[A-Za-z0-9._:@-]{1,128}$/;

/** The id of this request: the caller's X-Request-Id if it is plain and short enough, else a new UUID. */
export function requestIdOf(header: string | undefined): string {
  return header && VALID_REQUEST_ID.test(header) ? header : randomUUID();
}

/** The logger of this request (its lines carry `requestId`). */
export function requestLog(ctx: Koa.Context): Logger {
  return ctx.state.log as Logger;
}

/** The request's id (set by accessLog). */
export function requestId(ctx: Koa.Context): string {
  return ctx.state.requestId as string;
}

/**
 * What a crowd asks again and again: probes and scrapes, the waiting room's polls and the queue
 * page's refreshes, a purchase read until its checkout opens, a product read until its sale opens.
 * A 100,000-buyer drop makes millions of these; they log at `debug` (their count and latency are in
 * flashsale_http_request_duration_seconds, by route).
 */
const REPEATED_READS = new Set([
  '/healthz',
  '/readyz',
  '/metrics',
  '/v1/queue/:ticket',
  '/queue/:ticket',
  '/v1/purchases/:id',
  '/purchases/:id',
  '/v1/products/:sku',
  '/p/:sku',
  // An operator's (or the drill's) watch of a room, read every few seconds.
  '/v1/products/:sku/waiting-room',
]);

/**
 * A request's access-log level: `warn` for a 5xx (unless its route answered it on purpose:
 * `expectedFailure`, a draining /readyz), `debug` for a repeated read (REPEATED_READS), else `info`.
 */
export function accessLogLevel(
  method: string,
  route: string,
  status: number,
  expectedFailure = false,
): 'warn' | 'info' | 'debug' {
  if (status >= 500 && !expectedFailure) return 'warn';
  return (method === 'GET' || method === 'HEAD') && REPEATED_READS.has(route) ? 'debug' : 'info';
}

/**
 * Sets the request id (echoed in X-Request-Id), times the request, and logs one `request` line
 * (accessLogLevel): method, path, the route template, status, duration, client address.
 */
export function accessLog(logger: Logger, metrics: Pick<Metrics, 'httpSeconds'>): Koa.Middleware {
  return async (ctx, next) => {
    const started = process.hrtime.bigint();
    const id = requestIdOf(ctx.get(REQUEST_ID_HEADER) || undefined);
    ctx.state.requestId = id;
    ctx.state.log = logger.child({ requestId: id });
    ctx.set(REQUEST_ID_HEADER, id);
    // Read while the request has its socket: a client that hung up leaves none to read it from.
    const ip = ctx.ip;
    try {
      await next();
    } finally {
      const seconds = Number(process.hrtime.bigint() - started) / 1e9;
      // The route template keeps the histogram's series bounded (`/v1/purchases/:id`, not every id).
      const matched = (ctx as { _matchedRoute?: unknown })._matchedRoute;
      const route = typeof matched === 'string' ? matched : 'unmatched';
      metrics.httpSeconds.observe({ method: ctx.method, route, status: String(ctx.status) }, seconds);
      const line = {
        method: ctx.method,
        path: ctx.path,
        route,
        status: ctx.status,
        durationMs: Math.round(seconds * 1e4) / 10,
        ip,
      };
      const expected = ctx.state.expectedFailure === true;
      requestLog(ctx)[accessLogLevel(ctx.method, route, ctx.status, expected)](line, 'request');
    }
  };
}
