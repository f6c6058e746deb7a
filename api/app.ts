import Koa from 'koa';
import { accessLog } from './access-log';
import { resolveClientAddress } from './client-address';
import { requireBearer } from './auth';
import { jsonBodies } from './body';
import { answerClientErrors } from './client-errors';
import type { ApiDeps } from './deps';
import { answerOutages } from './outage';
import { pageErrors } from './page-errors';
import { isPagePath } from './page-paths';
import { problemMiddleware } from './problem';
import { limitPageReads } from './rate-limits';
import { KNOWN_METHODS, requestGuard } from './request-guard';
import { botCheckRoutes } from './routes/bot-check';
import { catalogueRoutes } from './routes/catalogue';
import { opsRoutes } from './routes/ops';
import { pageFormRoutes } from './routes/page-forms';
import { pageRoutes } from './routes/pages';
import { purchaseRoutes } from './routes/purchases';
import { queueRoutes } from './routes/queue';
import { supportRoutes } from './routes/support';
import { webhookRoutes } from './routes/webhooks';

const WEBHOOK_PATH = '/v1/webhooks/stripe';

/**
 * The HTTP API (docs/openapi.json). No port is opened here: `app.callback()` serves tests and
 * `api/main.ts` alike; `app.listen()` also answers what Node's parser refuses as problems.
 */
export function createApp(deps: ApiDeps): Koa {
  const app = new Koa({ proxy: false });
  const routers = [
    opsRoutes(deps),
    // Early: a waiting room's polls are the most frequent request of a drop.
    queueRoutes(deps),
    catalogueRoutes(deps),
    botCheckRoutes(deps),
    purchaseRoutes(deps),
    webhookRoutes(deps),
    supportRoutes(deps),
    pageRoutes(deps),
    pageFormRoutes(deps),
  ];

  app.use(resolveClientAddress(deps.trustedProxies ?? []));
  app.use(accessLog(deps.logger, deps.metrics));
  app.use(problemMiddleware());
  // The buyer's pages answer their errors (an outage's 503 too) as HTML pages; everything else as problems.
  app.use(pageErrors(deps));
  // Before anything reads the database: one address cannot take the pool's connections with page reads.
  app.use(limitPageReads(deps.rateLimits));
  app.use(answerOutages(deps));
  app.use(requestGuard(routers.flatMap((r) => r.stack.map((layer) => String(layer.path)))));
  app.use(
    jsonBodies({
      // Only the admin may send a body as large as a product of 100,000 seats, so the token is checked first.
      large: (ctx) => ctx.method === 'POST' && /^\/v1\/products\/?$/.test(ctx.path),
      before: requireBearer(deps.adminToken, 'admin'),
      // The webhook route reads its raw body itself (the signature covers the exact bytes); the
      // buyer's pages take HTML forms (api/routes/page-forms.ts).
      // Matched as the routers match (any case, a trailing slash or not): a JSON parser that read the
      // webhook's body first would leave its route waiting for bytes already gone.
      skip: (ctx) => ctx.path.replace(/\/$/, '').toLowerCase() === WEBHOOK_PATH || isPagePath(ctx.path),
    }),
  );
  for (const router of routers) {
    // Every method Node knows is one the router knows: on a route that does not serve it (TRACE,
    // PROPFIND, ...) allowedMethods answers 405 with `Allow`, not its 501 for methods outside its list.
    router.methods = [...KNOWN_METHODS];
    app.use(router.routes());
    app.use(router.allowedMethods());
  }
  const listen = app.listen.bind(app);
  app.listen = ((...args: Parameters<Koa['listen']>) => answerClientErrors(listen(...args))) as Koa['listen'];
  return app;
}
