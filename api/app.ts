import { bodyParser } from '@koa/bodyparser';
import Koa from 'koa';
import type { ApiDeps } from './deps';
import { Problem, problemMiddleware } from './problem';
import { catalogueRoutes } from './routes/catalogue';
import { opsRoutes } from './routes/ops';
import { purchaseRoutes } from './routes/purchases';
import { supportRoutes } from './routes/support';
import { webhookRoutes } from './routes/webhooks';

/** The HTTP API (docs/openapi.json). No port is opened here: `app.callback()` serves tests and `api/main.ts` alike. */
export function createApp(deps: ApiDeps): Koa {
  const app = new Koa({ proxy: false });

  app.use(problemMiddleware(deps.log));
  // The webhook route reads its raw body itself (the signature covers the exact bytes).
  const json = bodyParser({
    enableTypes: ['json'],
    jsonLimit: '64kb',
    encoding: 'utf-8',
    onError: (err) => {
      throw new Problem(400, 'invalid-request', `body: ${err.message}`, {
        errors: [{ field: 'body', message: err.message }],
      });
    },
  });
  app.use(async (ctx, next) => {
    if (ctx.path === '/v1/webhooks/stripe') await next();
    else await json(ctx, next);
  });
  for (const router of [
    opsRoutes(deps),
    catalogueRoutes(deps),
    purchaseRoutes(deps),
    webhookRoutes(deps),
    supportRoutes(deps),
  ]) {
    app.use(router.routes());
    app.use(router.allowedMethods());
  }
  return app;
}
