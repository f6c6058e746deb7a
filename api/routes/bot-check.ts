import fs from 'node:fs';
import path from 'node:path';
import { Router } from '@koa/router';
import type { ApiDeps } from '../deps';

/** The `altcha` widget (a web component, its workers inlined) as the package ships it: served from here, no CDN. */
export const WIDGET_PATH = '/assets/altcha.min.js';
export const WIDGET_SCRIPT = fs.readFileSync(path.join(path.dirname(require.resolve('altcha')), 'altcha.min.js'));

/**
 * The bot check's routes (api/bot-check.ts): a new signed challenge for every ask, and the widget's
 * script for the pages. No side effects: a challenge is written nowhere until a solution of it is
 * spent. Asking is public but not free (one derivation each), so each address may ask
 * RATE_LIMIT_CHALLENGES_PER_IP_PER_SECOND times a second.
 */
export function botCheckRoutes(deps: ApiDeps): Router {
  const router = new Router();
  router.get('/v1/bot-check/challenge', async (ctx) => {
    ctx.set('Cache-Control', 'no-store');
    // Before the derivation: a refused ask costs no more than any other short answer.
    await deps.rateLimits?.takeChallenge(ctx.ip);
    ctx.body = await deps.botCheck.challenge();
  });
  router.get(WIDGET_PATH, (ctx) => {
    ctx.type = 'text/javascript; charset=utf-8';
    ctx.set('Cache-Control', 'public, max-age=86400');
    ctx.body = WIDGET_SCRIPT;
  });
  return router;
}
