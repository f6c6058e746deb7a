import { Router } from '@koa/router';
import Koa from 'koa';
import { setTimeout as sleep } from 'node:timers/promises';

import { BodyTooLargeError, readText } from './body';
import {
  StripeApiError,
  endpointFault,
  faultError,
  internalError,
  invalidApiKey,
  missingApiKey,
  unrecognizedUrl,
  unsupportedContentType,
} from './errors';
import { expand, expandList, paginate } from './expand';
import type { FaultInjector } from './faults';
import type { RateLimiter } from './rate-limit';
import type { IdempotencyStore } from './idempotency';
import { newId } from './ids';
import { readRefundParams, readSessionParams } from './inputs';
import type { LineItem } from './objects';
import { ParamReader, type Params, parseStripeParams } from './params';
import type { EmulatorStore, RequestRef } from './store';

export interface ApiDeps {
  store: EmulatorStore;
  faults: FaultInjector;
  limiter: RateLimiter;
  idempotency: IdempotencyStore;
  apiVersion: string;
  /** Aborted when the emulator closes, cutting injected latency short. */
  signal: AbortSignal;
  log: (line: string) => void;
}

export interface ApiState {
  requestId: string;
  apiKey: string;
  params: Params;
  idempotencyKey: string | null;
  /** The status of a `saved` fault this call meets: its endpoint fails, and the failure is kept under its key. */
  savedFault: number | null;
}

type ApiContext = Koa.ParameterizedContext<ApiState>;
type ApiMiddleware = Koa.Middleware<ApiState>;

/**
 * The Stripe API subset under `/v1`: bearer auth, Stripe's rate limits, Stripe's form parameters, injected faults,
 * idempotency-key replay, then the routes. Every answer carries `Request-Id` and `Stripe-Version`.
 */
export function createStripeApi(deps: ApiDeps): Koa<ApiState> {
  const app = new Koa<ApiState>();
  app.use(stripeEnvelope(deps));
  app.use(requireApiKey());
  // Before anything else looks at the request: a refused one is not processed at all.
  app.use(async (ctx, next) => {
    deps.limiter.admit(ctx.method, ctx.path);
    await next();
  });
  app.use(readParams());
  app.use(injectFaults(deps));
  app.use(idempotency(deps));
  const router = stripeRoutes(deps.store);
  app.use(router.routes());
  app.use((ctx) => {
    throw unrecognizedUrl(ctx.method, ctx.path);
  });
  return app;
}

export function sendJson(ctx: Koa.Context | ApiContext, status: number, body: unknown): void {
  ctx.status = status;
  ctx.type = 'application/json';
  ctx.body = JSON.stringify(body, null, 2);
}

function respondError(ctx: ApiContext, error: unknown, log: (line: string) => void): void {
  let stripeError: StripeApiError;
  if (error instanceof StripeApiError) stripeError = error;
  else if (error instanceof BodyTooLargeError) {
    stripeError = new StripeApiError(413, 'invalid_request_error', error.message, {}, false);
  } else if (error instanceof Error && error.name === 'AbortError') {
    // Injected latency cut short by close(): the connection is going away anyway.
    stripeError = internalError();
  } else {
    // Details of an emulator bug stay in the log, as Stripe hides its 5xx causes.
    log(`error ${ctx.method} ${ctx.path}: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
    stripeError = internalError();
  }
  for (const [name, value] of Object.entries(stripeError.headers)) ctx.set(name, value);
  sendJson(ctx, stripeError.status, stripeError.toBody());
}

function stripeEnvelope(deps: ApiDeps): ApiMiddleware {
  return async (ctx, next) => {
    const requestId = newId.request();
    ctx.state.requestId = requestId;
    ctx.state.idempotencyKey = null;
    ctx.state.savedFault = null;
    ctx.set('Request-Id', requestId);
    ctx.set('Stripe-Version', ctx.get('Stripe-Version') || deps.apiVersion);
    ctx.set('Cache-Control', 'no-cache, no-store');
    try {
      await next();
    } catch (error) {
      respondError(ctx, error, deps.log);
    }
    deps.log(`${ctx.method} ${ctx.path} -> ${ctx.status} ${requestId}`);
  };
}

function requireApiKey(): ApiMiddleware {
  return async (ctx, next) => {
    const header = ctx.get('Authorization').trim();
    const [scheme = '', credentials = ''] = header.split(/\s+/, 2);
    let key = '';
    if (/^bearer$/i.test(scheme)) key = credentials;
    else if (/^basic$/i.test(scheme)) key = Buffer.from(credentials, 'base64').toString('utf8').split(':')[0];
    if (!key) throw missingApiKey();
    if (!/^(sk|rk)_test_\w+$/.test(key)) throw invalidApiKey(key);
    ctx.state.apiKey = key;
    await next();
  };
}

function readParams(): ApiMiddleware {
  return async (ctx, next) => {
    if (ctx.method === 'GET' || ctx.method === 'DELETE' || ctx.method === 'HEAD') {
      ctx.state.params = parseStripeParams(ctx.querystring);
    } else {
      const raw = await readText(ctx.req);
      const type = ctx.request.type;
      if (raw.trim() !== '' && type !== 'application/x-www-form-urlencoded') throw unsupportedContentType(type);
      ctx.state.params = parseStripeParams(raw);
    }
    await next();
  };
}

function injectFaults(deps: ApiDeps): ApiMiddleware {
  return async (ctx, next) => {
    const fault = deps.faults.take(ctx.method, ctx.path);
    if (fault) {
      deps.log(
        `fault #${fault.id} on ${ctx.method} ${ctx.path}: status ${fault.status ?? '-'}, +${fault.latencyMs} ms` +
          (fault.afterServing ? ', after serving' : ''),
      );
      if (fault.latencyMs > 0) await sleep(fault.latencyMs, undefined, { signal: deps.signal });
      if (fault.saved) {
        // Past the idempotency layer: the endpoint itself fails (see idempotency()).
        ctx.state.savedFault = fault.status ?? 500;
        await next();
        return;
      }
      if (fault.afterServing) {
        await next();
        // The work is done and stored under its key; only the answer is lost. What arrives instead is
        // a failure of the way there, not a replay Stripe kept (a retry gets the stored answer).
        ctx.remove('Idempotent-Replayed');
        ctx.remove('Original-Request');
        throw faultError(fault.status ?? 500);
      }
      if (fault.status !== null) throw faultError(fault.status);
    }
    await next();
  };
}

/**
 * Replays the stored first answer of an `Idempotency-Key` (status, body and headers, with
 * `Idempotent-Replayed: true`); a key reused with other parameters is an `idempotency_error`. A 5xx
 * is kept only when the endpoint itself failed (a `saved` fault), as Stripe keeps it.
 */
function idempotency(deps: ApiDeps): ApiMiddleware {
  return async (ctx, next) => {
    const endpoint = (): Promise<void> => {
      if (ctx.state.savedFault !== null) throw endpointFault(ctx.state.savedFault);
      return next();
    };
    const key = ctx.get('Idempotency-Key');
    if (ctx.method !== 'POST' || !key) {
      await endpoint();
      return;
    }
    if (key.length > 255) {
      throw new StripeApiError(
        400,
        'invalid_request_error',
        'Idempotency-Key must be at most 255 characters.',
        {},
        false,
      );
    }
    ctx.set('Idempotency-Key', key);
    const outcome = deps.idempotency.begin(ctx.state.apiKey, key, `${ctx.method} ${ctx.path}`, ctx.state.params);
    if (outcome.kind === 'replay') {
      ctx.status = outcome.response.status;
      ctx.type = 'application/json';
      ctx.body = outcome.response.body;
      for (const [name, value] of Object.entries(outcome.response.headers ?? {})) ctx.set(name, value);
      ctx.set('Idempotent-Replayed', 'true');
      ctx.set('Original-Request', outcome.response.requestId);
      return;
    }
    ctx.state.idempotencyKey = key;
    let headers: Record<string, string> | undefined;
    try {
      await endpoint();
    } catch (error) {
      if (!(error instanceof StripeApiError) || !error.replayable) {
        outcome.abandon();
        throw error;
      }
      respondError(ctx, error, deps.log);
      if (Object.keys(error.headers).length) headers = error.headers;
    }
    if (typeof ctx.body === 'string' && (ctx.status < 500 || ctx.state.savedFault !== null)) {
      outcome.save({
        status: ctx.status,
        body: ctx.body,
        requestId: ctx.state.requestId,
        ...(headers ? { headers } : {}),
      });
    } else {
      outcome.abandon();
    }
  };
}

function requestRef(ctx: ApiContext): RequestRef {
  return { id: ctx.state.requestId, idempotencyKey: ctx.state.idempotencyKey };
}

function stripeRoutes(store: EmulatorStore): Router<ApiState> {
  const router = new Router<ApiState>({ prefix: '/v1' });
  const reader = (ctx: ApiContext): ParamReader => new ParamReader(ctx.state.params);
  const retrieveParams = (ctx: ApiContext): string[] => reader(ctx).allowOnly(['expand']).strings('expand');

  /** Creates an open Checkout Session; no PaymentIntent exists until the buyer pays. */
  router.post('/checkout/sessions', (ctx) => {
    const params = reader(ctx);
    const input = readSessionParams(params);
    const paths = params.strings('expand');
    const session = store.createSession(input);
    sendJson(ctx, 200, expand(store, session, paths));
  });

  router.get('/checkout/sessions', (ctx) => {
    const params = reader(ctx).allowOnly([
      'created',
      'customer',
      'customer_account',
      'customer_details',
      'ending_before',
      'expand',
      'limit',
      'payment_intent',
      'payment_link',
      'starting_after',
      'status',
      'subscription',
    ]);
    const sessions = store.listSessions({
      paymentIntent: params.string('payment_intent') ?? undefined,
      status: params.oneOf('status', ['open', 'complete', 'expired'] as const) ?? undefined,
    });
    const page = paginate(sessions, params, '/v1/checkout/sessions', 'checkout.session');
    sendJson(ctx, 200, expandList(store, page, params.strings('expand')));
  });

  router.get('/checkout/sessions/:id', (ctx) => {
    const paths = retrieveParams(ctx);
    sendJson(ctx, 200, expand(store, store.getSession(ctx.params.id), paths));
  });

  router.get('/checkout/sessions/:id/line_items', (ctx) => {
    const params = reader(ctx).allowOnly(['ending_before', 'expand', 'limit', 'starting_after']);
    const items: LineItem[] = store.getLineItems(ctx.params.id);
    sendJson(ctx, 200, paginate(items, params, `/v1/checkout/sessions/${ctx.params.id}/line_items`, 'line_item'));
  });

  /** Expires an open session (event `checkout.session.expired`); any other status is refused. */
  router.post('/checkout/sessions/:id/expire', (ctx) => {
    const paths = retrieveParams(ctx);
    sendJson(ctx, 200, expand(store, store.expireSession(ctx.params.id, requestRef(ctx)), paths));
  });

  router.get('/payment_intents/:id', (ctx) => {
    const paths = reader(ctx).allowOnly(['client_secret', 'expand']).strings('expand');
    sendJson(ctx, 200, expand(store, store.getPaymentIntent(ctx.params.id), paths));
  });

  router.get('/charges/:id', (ctx) => {
    sendJson(ctx, 200, expand(store, store.getCharge(ctx.params.id), retrieveParams(ctx)));
  });

  /** The PaymentMethod of a payment attempt (`charge.payment_method`, a PaymentIntent's `payment_method`). */
  router.get('/payment_methods/:id', (ctx) => {
    sendJson(ctx, 200, expand(store, store.getPaymentMethod(ctx.params.id), retrieveParams(ctx)));
  });

  /** Refunds a succeeded payment (events `refund.created`, and `charge.refunded` once the refund succeeds). */
  router.post('/refunds', (ctx) => {
    const params = reader(ctx);
    const input = readRefundParams(params);
    const refund = store.createRefund(input, requestRef(ctx));
    sendJson(ctx, 200, expand(store, refund, params.strings('expand')));
  });

  router.get('/refunds', (ctx) => {
    const params = reader(ctx).allowOnly([
      'charge',
      'created',
      'ending_before',
      'expand',
      'limit',
      'payment_intent',
      'starting_after',
    ]);
    const refunds = store.listRefunds({
      paymentIntent: params.string('payment_intent') ?? undefined,
      charge: params.string('charge') ?? undefined,
    });
    const page = paginate(refunds, params, '/v1/refunds', 'refund');
    sendJson(ctx, 200, expandList(store, page, params.strings('expand')));
  });

  router.get('/refunds/:id', (ctx) => {
    sendJson(ctx, 200, expand(store, store.getRefund(ctx.params.id), retrieveParams(ctx)));
  });

  router.get('/disputes', (ctx) => {
    const params = reader(ctx).allowOnly([
      'charge',
      'created',
      'ending_before',
      'expand',
      'limit',
      'payment_intent',
      'starting_after',
    ]);
    const disputes = store.disputes.list({
      charge: params.string('charge') ?? undefined,
      paymentIntent: params.string('payment_intent') ?? undefined,
    });
    const page = paginate(disputes, params, '/v1/disputes', 'dispute');
    sendJson(ctx, 200, expandList(store, page, params.strings('expand')));
  });

  router.get('/disputes/:id', (ctx) => {
    sendJson(ctx, 200, expand(store, store.disputes.get(ctx.params.id), retrieveParams(ctx)));
  });

  /** The merchant accepts the dispute: it is lost (event `charge.dispute.closed`). */
  router.post('/disputes/:id/close', (ctx) => {
    const paths = retrieveParams(ctx);
    sendJson(ctx, 200, expand(store, store.disputes.acceptByApi(ctx.params.id, requestRef(ctx)), paths));
  });

  router.get('/events', (ctx) => {
    const params = reader(ctx).allowOnly([
      'created',
      'delivery_success',
      'ending_before',
      'expand',
      'limit',
      'starting_after',
      'type',
      'types',
    ]);
    const type = params.string('type') ?? undefined;
    const events = [...store.listEvents({ type })].reverse();
    sendJson(ctx, 200, paginate(events, params, '/v1/events', 'event'));
  });

  router.get('/events/:id', (ctx) => {
    retrieveParams(ctx);
    sendJson(ctx, 200, store.getEvent(ctx.params.id));
  });

  return router;
}
