import { Router } from '@koa/router';
import Koa from 'koa';
import { setTimeout as sleep } from 'node:timers/promises';

import { BodyTooLargeError, readText } from './body';
import {
  StripeApiError,
  faultError,
  internalError,
  invalidApiKey,
  invalidParam,
  missingApiKey,
  resourceMissing,
  unrecognizedUrl,
  unsupportedContentType,
} from './errors';
import type { FaultInjector } from './faults';
import type { IdempotencyStore } from './idempotency';
import { newId } from './ids';
import type { LineItem, ListObject, RefundReason, StripeObject } from './objects';
import { ParamReader, type Params, parseStripeParams } from './params';
import type { EmulatorStore, LineItemInput, RefundInput, RequestRef, SessionInput } from './store';

export interface ApiDeps {
  store: EmulatorStore;
  faults: FaultInjector;
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
}

type ApiContext = Koa.ParameterizedContext<ApiState>;
type ApiMiddleware = Koa.Middleware<ApiState>;

/**
 * The Stripe API subset under `/v1`: bearer auth, injected faults, Stripe's form parameters,
 * idempotency-key replay, then the routes. Every answer carries `Request-Id` and `Stripe-Version`.
 */
export function createStripeApi(deps: ApiDeps): Koa<ApiState> {
  const app = new Koa<ApiState>();
  app.use(stripeEnvelope(deps));
  app.use(requireApiKey());
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
  sendJson(ctx, stripeError.status, stripeError.toBody());
}

function stripeEnvelope(deps: ApiDeps): ApiMiddleware {
  return async (ctx, next) => {
    const requestId = newId.request();
    ctx.state.requestId = requestId;
    ctx.state.idempotencyKey = null;
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
        `fault #${fault.id} on ${ctx.method} ${ctx.path}: status ${fault.status ?? '-'}, +${fault.latencyMs} ms`,
      );
      if (fault.latencyMs > 0) await sleep(fault.latencyMs, undefined, { signal: deps.signal });
      if (fault.status !== null) throw faultError(fault.status);
    }
    await next();
  };
}

/**
 * Replays the stored first answer of an `Idempotency-Key` (status and body, with
 * `Idempotent-Replayed: true`); a key reused with other parameters is an `idempotency_error`.
 */
function idempotency(deps: ApiDeps): ApiMiddleware {
  return async (ctx, next) => {
    const key = ctx.get('Idempotency-Key');
    if (ctx.method !== 'POST' || !key) {
      await next();
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
      ctx.set('Idempotent-Replayed', 'true');
      ctx.set('Original-Request', outcome.response.requestId);
      return;
    }
    ctx.state.idempotencyKey = key;
    try {
      await next();
    } catch (error) {
      if (!(error instanceof StripeApiError) || !error.replayable) {
        outcome.abandon();
        throw error;
      }
      respondError(ctx, error, deps.log);
    }
    if (typeof ctx.body === 'string' && ctx.status < 500) {
      outcome.save({ status: ctx.status, body: ctx.body, requestId: ctx.state.requestId });
    } else {
      outcome.abandon();
    }
  };
}

function requestRef(ctx: ApiContext): RequestRef {
  return { id: ctx.state.requestId, idempotencyKey: ctx.state.idempotencyKey };
}

const SESSION_CREATE_PARAMS = [
  'adaptive_pricing',
  'after_expiration',
  'allow_promotion_codes',
  'allowed_payment_method_types',
  'automatic_tax',
  'billing_address_collection',
  'branding_settings',
  'cancel_url',
  'client_reference_id',
  'consent_collection',
  'currency',
  'custom_fields',
  'custom_text',
  'customer',
  'customer_account',
  'customer_creation',
  'customer_email',
  'customer_update',
  'discounts',
  'excluded_payment_method_types',
  'expand',
  'expires_at',
  'integration_identifier',
  'invoice_creation',
  'line_items',
  'locale',
  'managed_payments',
  'metadata',
  'mode',
  'name_collection',
  'optional_items',
  'origin_context',
  'payment_intent_data',
  'payment_method_collection',
  'payment_method_configuration',
  'payment_method_data',
  'payment_method_options',
  'payment_method_types',
  'permissions',
  'phone_number_collection',
  'redirect_on_completion',
  'return_url',
  'saved_payment_method_options',
  'setup_intent_data',
  'shipping_address_collection',
  'shipping_options',
  'submit_type',
  'subscription_data',
  'success_url',
  'tax_id_collection',
  'ui_mode',
  'wallet_options',
] as const;

const PAYMENT_INTENT_DATA_PARAMS = [
  'application_fee_amount',
  'capture_method',
  'description',
  'metadata',
  'on_behalf_of',
  'receipt_email',
  'setup_future_usage',
  'shipping',
  'statement_descriptor',
  'statement_descriptor_suffix',
  'transfer_data',
  'transfer_group',
] as const;

const REFUND_CREATE_PARAMS = [
  'amount',
  'charge',
  'currency',
  'customer',
  'expand',
  'instructions_email',
  'metadata',
  'origin',
  'payment_intent',
  'reason',
  'refund_application_fee',
  'reverse_transfer',
] as const;

const REFUND_REASONS: readonly RefundReason[] = ['duplicate', 'fraudulent', 'requested_by_customer'];

/** Known Stripe parameters outside the emulated subset are accepted and ignored. */
function readSessionParams(params: ParamReader): SessionInput {
  params.allowOnly(SESSION_CREATE_PARAMS);
  const mode = params.oneOf('mode', ['payment', 'setup', 'subscription'] as const, { required: true });
  if (mode !== 'payment') {
    throw invalidParam('mode', `The payments emulator supports only mode=payment, not mode=${mode}.`);
  }
  const items = params.array('line_items');
  if (!items || items.length === 0)
    throw invalidParam('line_items', 'Missing required param: line_items.', 'parameter_missing');
  if (items.length > 100) throw invalidParam('line_items', 'A Checkout Session can have at most 100 line items.');
  const intentData = params.object('payment_intent_data')?.allowOnly(PAYMENT_INTENT_DATA_PARAMS) ?? null;
  return {
    lineItems: items.map(readLineItem),
    successUrl: params.url('success_url'),
    cancelUrl: params.url('cancel_url'),
    expiresAt: params.integer('expires_at'),
    metadata: params.metadata(),
    clientReferenceId: params.string('client_reference_id', { maxLength: 200 }),
    customerEmail: params.string('customer_email', { maxLength: 800 }),
    paymentIntentData: {
      metadata: intentData?.metadata() ?? {},
      description: intentData?.string('description', { maxLength: 1000 }) ?? null,
      receiptEmail: intentData?.string('receipt_email', { maxLength: 800 }) ?? null,
    },
  };
}

function readLineItem(item: ParamReader): LineItemInput {
  item.allowOnly([
    'adjustable_quantity',
    'dynamic_tax_rates',
    'metadata',
    'price',
    'price_data',
    'quantity',
    'tax_rates',
  ]);
  const priceId = item.string('price');
  const priceData = item.object('price_data');
  if (priceId !== null && priceData === null) throw resourceMissing('price', priceId, item.name('price'));
  if (priceData === null) {
    throw invalidParam(item.name('price_data'), 'You must specify either `price` or `price_data` for each line item.');
  }
  const quantity = item.integer('quantity', { required: true, min: 1 });
  priceData.allowOnly([
    'currency',
    'product',
    'product_data',
    'recurring',
    'tax_behavior',
    'unit_amount',
    'unit_amount_decimal',
  ]);
  const currency = priceData.string('currency', { required: true }).toLowerCase();
  if (!/^[a-z]{3}$/.test(currency)) throw invalidParam(priceData.name('currency'), `Invalid currency: ${currency}`);
  if (priceData.has('recurring')) {
    throw invalidParam(
      priceData.name('recurring'),
      'You must be in `subscription` mode to use recurring prices; this session is in `payment` mode.',
    );
  }
  const productId = priceData.string('product');
  const product = priceData.object('product_data');
  if (productId !== null && product === null) throw resourceMissing('product', productId, priceData.name('product'));
  if (product === null)
    throw invalidParam(priceData.name('product_data'), 'Missing required param: product_data.', 'parameter_missing');
  product.allowOnly(['description', 'images', 'metadata', 'name', 'tax_code', 'unit_label']);
  return {
    name: product.string('name', { required: true, maxLength: 250 }),
    description: product.string('description'),
    currency,
    unitAmount: priceData.integer('unit_amount', { required: true, min: 0 }),
    quantity,
    metadata: item.metadata(),
  };
}

function readRefundParams(params: ParamReader): RefundInput {
  params.allowOnly(REFUND_CREATE_PARAMS);
  const paymentIntent = params.string('payment_intent');
  const charge = params.string('charge');
  if (paymentIntent === null && charge === null) {
    throw new StripeApiError(
      400,
      'invalid_request_error',
      'One of the following params should be provided for this request: payment_intent or charge.',
      { code: 'parameter_missing' },
      false,
    );
  }
  return {
    paymentIntent,
    charge,
    amount: params.integer('amount', { min: 1 }),
    reason: params.oneOf('reason', REFUND_REASONS),
    metadata: params.metadata(),
  };
}

/** Expansion of the fields Stripe lets clients expand on these objects (`expand[]=payment_intent`). */
function expand(store: EmulatorStore, object: StripeObject, paths: string[], prefix = ''): unknown {
  const out = structuredClone(object) as unknown as Record<string, unknown>;
  const nestedByField = new Map<string, string[]>();
  for (const path of paths) {
    const [field, ...rest] = path.split('.');
    const nested = nestedByField.get(field) ?? [];
    if (rest.length > 0) nested.push(rest.join('.'));
    nestedByField.set(field, nested);
  }
  for (const [field, nested] of nestedByField) {
    const cannot = (): StripeApiError =>
      invalidParam('expand', `This property cannot be expanded (${prefix}${field}).`, 'parameter_invalid');
    const value = out[field];
    if (object.object === 'checkout.session' && field === 'line_items') {
      if (nested.length > 0) throw cannot();
      out.line_items = list(store.getLineItems(object.id), `/v1/checkout/sessions/${object.id}/line_items`);
      continue;
    }
    const target = resolveReference(store, object, field, value);
    if (target === undefined) throw cannot();
    out[field] = target === null ? null : expand(store, target, nested, `${prefix}${field}.`);
  }
  return out;
}

function resolveReference(
  store: EmulatorStore,
  object: StripeObject,
  field: string,
  value: unknown,
): StripeObject | null | undefined {
  const fields: Record<StripeObject['object'], Record<string, (id: string) => StripeObject>> = {
    'checkout.session': { payment_intent: (id) => store.getPaymentIntent(id) },
    payment_intent: { latest_charge: (id) => store.getCharge(id) },
    charge: { payment_intent: (id) => store.getPaymentIntent(id) },
    refund: { charge: (id) => store.getCharge(id), payment_intent: (id) => store.getPaymentIntent(id) },
  };
  const resolve = fields[object.object][field];
  if (!resolve) return undefined;
  return typeof value === 'string' ? resolve(value) : null;
}

function list<T>(data: T[], url: string, hasMore = false): ListObject<T> {
  return { object: 'list', data, has_more: hasMore, url };
}

/** Newest-first pagination with `limit` and `starting_after`/`ending_before`, as Stripe lists do. */
function paginate<T extends { id: string }>(
  items: T[],
  params: ParamReader,
  url: string,
  objectName: string,
): ListObject<T> {
  const limit = params.integer('limit', { min: 1 }) ?? 10;
  if (limit > 100) throw invalidParam('limit', 'This value must be less than or equal to 100.');
  const after = params.string('starting_after');
  const before = params.string('ending_before');
  let window = items;
  if (after !== null) {
    const index = items.findIndex((item) => item.id === after);
    if (index < 0) throw resourceMissing(objectName, after, 'starting_after');
    window = items.slice(index + 1);
  } else if (before !== null) {
    const index = items.findIndex((item) => item.id === before);
    if (index < 0) throw resourceMissing(objectName, before, 'ending_before');
    window = items.slice(Math.max(0, index - limit), index);
  }
  return list(window.slice(0, limit), url, window.length > limit);
}

function expandList<T extends StripeObject>(store: EmulatorStore, page: ListObject<T>, paths: string[]): unknown {
  const itemPaths = paths.map((path) => {
    if (!path.startsWith('data.')) {
      throw invalidParam(
        'expand',
        `This property cannot be expanded (${path}). You may want to try expanding 'data.${path}' instead.`,
      );
    }
    return path.slice('data.'.length);
  });
  return { ...page, data: page.data.map((item) => expand(store, item, itemPaths)) };
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

  /** Refunds a succeeded payment (events `refund.created`, `charge.refunded`). */
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
