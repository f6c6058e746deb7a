import { Router } from '@koa/router';
import type Koa from 'koa';

import { BodyTooLargeError, optionalBoolean, optionalInteger, readJson } from './body';
import { moneyControlRoutes } from './control-money';
import { payControlRoute } from './control-pay';
import { Problem } from './errors';
import type { FaultInjector, FaultSpec } from './faults';
import type { IdempotencyStore } from './idempotency';
import type { RateLimiter } from './rate-limit';
import type { EmulatorStore } from './store';
import { MAX_PARALLEL_DELIVERIES, type WebhookDispatcher, type WebhookSettings } from './webhooks';

export interface ControlDeps {
  store: EmulatorStore;
  faults: FaultInjector;
  limiter: RateLimiter;
  webhooks: WebhookDispatcher;
  idempotency: IdempotencyStore;
  url: () => string;
}

/** Answers control-route failures as RFC 9457 problem details. */
export function problemDetails(log: (line: string) => void): Koa.Middleware {
  return async (ctx, next) => {
    try {
      await next();
    } catch (error) {
      const problem =
        error instanceof Problem
          ? error
          : error instanceof BodyTooLargeError
            ? new Problem(413, 'body_too_large', error.message)
            : new Problem(500, 'internal_error', 'The payments emulator failed to handle this request.');
      if (problem.status === 500) {
        log(
          `error ${ctx.method} ${ctx.path}: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`,
        );
      }
      ctx.status = problem.status;
      ctx.type = 'application/problem+json';
      ctx.body = JSON.stringify(problem.toBody());
    }
  };
}

/** The `/_emulator` routes tests and developers use to act as the buyer, inject faults and steer webhooks. */
export function controlRoutes(deps: ControlDeps): Router {
  const { store, faults, webhooks } = deps;
  const router = new Router({ prefix: '/_emulator' });

  router.get('/health', (ctx) => {
    ctx.body = { ok: true, url: deps.url() };
  });

  payControlRoute(router, store);

  /** The session lapses now, as if its `expires_at` had passed (event `checkout.session.expired`). */
  router.post('/sessions/:id/lapse', (ctx) => {
    ctx.body = store.lapseSession(ctx.params.id);
  });

  router.get('/faults', (ctx) => {
    ctx.body = { data: faults.list() };
  });

  router.post('/faults', async (ctx) => {
    const body = await readJson(ctx);
    if (typeof body.path !== 'string' || !body.path.startsWith('/')) {
      throw new Problem(
        400,
        'invalid_fault',
        'path must be a string starting with "/", such as /v1/checkout/sessions.',
      );
    }
    const spec: FaultSpec = { path: body.path };
    if (body.method !== undefined) {
      if (typeof body.method !== 'string' || !/^[A-Za-z]+$/.test(body.method)) {
        throw new Problem(400, 'invalid_fault', 'method must be an HTTP method such as POST.');
      }
      spec.method = body.method;
    }
    const status = optionalInteger(body, 'status', 400, 599);
    const count = optionalInteger(body, 'count', 1, 10_000);
    const latencyMs = optionalInteger(body, 'latencyMs', 0, 600_000);
    if (status !== undefined) spec.status = status;
    if (count !== undefined) spec.count = count;
    if (latencyMs !== undefined) spec.latencyMs = latencyMs;
    if (body.rate !== undefined) {
      if (typeof body.rate !== 'number' || !(body.rate > 0 && body.rate <= 1)) {
        throw new Problem(400, 'invalid_fault', 'rate must be a number above 0 and at most 1, such as 0.2.');
      }
      spec.rate = body.rate;
    }
    const seed = optionalInteger(body, 'seed', 0, 2 ** 32 - 1);
    if (seed !== undefined) spec.seed = seed;
    const afterServing = optionalBoolean(body, 'afterServing');
    if (afterServing !== undefined) spec.afterServing = afterServing;
    const saved = optionalBoolean(body, 'saved');
    if (saved !== undefined) spec.saved = saved;
    if (saved && (afterServing || (spec.status ?? 500) < 500)) {
      throw new Problem(
        400,
        'invalid_fault',
        'saved is a 5xx the endpoint answered (Stripe keeps it under the key): not with afterServing or a status below 500.',
      );
    }
    ctx.status = 201;
    ctx.body = faults.add(spec);
  });

  router.delete('/faults', (ctx) => {
    ctx.body = { cleared: faults.clear() };
  });

  /** The rate limits in force and, per endpoint, how many calls were served and how many refused with 429. */
  router.get('/rate-limits', (ctx) => {
    ctx.body = deps.limiter.report();
  });

  /** `{accountPerSecond?, endpointPerSecond?, resetCounts?}`: new limits (0: none) from now on. */
  router.post('/rate-limits', async (ctx) => {
    const body = await readJson(ctx);
    const account = optionalInteger(body, 'accountPerSecond', 0, 100_000);
    const endpoint = optionalInteger(body, 'endpointPerSecond', 0, 100_000);
    if (account !== undefined || endpoint !== undefined) {
      const now = deps.limiter.current;
      deps.limiter.configure({
        accountPerSecond: account ?? now.accountPerSecond,
        endpointPerSecond: endpoint ?? now.endpointPerSecond,
      });
    }
    if (optionalBoolean(body, 'resetCounts')) deps.limiter.resetCounts();
    ctx.body = deps.limiter.report();
  });

  router.get('/webhooks', (ctx) => {
    ctx.body = webhooks.describeSettings();
  });

  /**
   * `{duplicate?, shuffle?, pause?, parallel?, url?}`: applies to deliveries from now on; `pause: false`
   * releases held ones; `parallel` is how many go out at once (1 to MAX_PARALLEL_DELIVERIES).
   */
  router.post('/webhooks', async (ctx) => {
    const body = await readJson(ctx);
    const changes: Partial<WebhookSettings> = {};
    const duplicate = optionalInteger(body, 'duplicate', 1, 100);
    const shuffle = optionalBoolean(body, 'shuffle');
    const pause = optionalBoolean(body, 'pause');
    const parallel = optionalInteger(body, 'parallel', 1, MAX_PARALLEL_DELIVERIES);
    if (duplicate !== undefined) changes.duplicate = duplicate;
    if (shuffle !== undefined) changes.shuffle = shuffle;
    if (pause !== undefined) changes.paused = pause;
    if (parallel !== undefined) changes.parallel = parallel;
    if (body.url !== undefined) {
      if (typeof body.url !== 'string' || !/^https?:\/\//.test(body.url)) {
        throw new Problem(400, 'invalid_webhooks', 'url must be an http(s) URL.');
      }
      webhooks.setUrl(body.url);
    }
    ctx.body = webhooks.configure(changes);
  });

  /** Events sent so far, oldest first, with every delivery and its attempts. */
  router.get('/events', (ctx) => {
    const type = typeof ctx.query.type === 'string' ? ctx.query.type : undefined;
    ctx.body = {
      data: store.listEvents({ type }).map((event) => {
        const deliveries = webhooks.describe(event.id);
        return {
          id: event.id,
          type: event.type,
          created: event.created,
          object_id: event.data.object.id,
          delivered: deliveries.some((d) => d.state === 'delivered'),
          deliveries,
          event,
        };
      }),
    };
  });

  moneyControlRoutes(router, store);

  /** Forgets all objects, events, deliveries, faults and idempotency keys; the webhook URL stays. */
  router.post('/reset', (ctx) => {
    store.reset();
    webhooks.reset();
    faults.clear();
    deps.limiter.resetCounts();
    deps.idempotency.clear();
    ctx.body = { reset: true };
  });

  return router;
}
