import { Router } from '@koa/router';
import type { ApiDeps } from '../deps';

/** /healthz (alive), /readyz (Postgres and Temporal reachable, not draining), /metrics (Prometheus). */
export function opsRoutes(deps: ApiDeps): Router {
  const router = new Router();
  router.get('/healthz', (ctx) => {
    ctx.body = { status: 'ok' };
  });
  router.get('/readyz', async (ctx) => {
    const checks: Record<string, string> = {};
    const probe = async (name: string, fn: () => Promise<unknown>) => {
      try {
        await Promise.race([fn(), new Promise((_, j) => setTimeout(() => j(new Error('timed out')), 2000).unref())]);
        checks[name] = 'ok';
      } catch (err) {
        checks[name] = (err as Error).message;
      }
    };
    await Promise.all([
      probe('postgres', () => deps.db.query('SELECT 1')),
      probe('temporal', () => deps.temporal.workflowService.getSystemInfo({})),
    ]);
    const ready = !deps.lifecycle.draining && Object.values(checks).every((v) => v === 'ok');
    ctx.status = ready ? 200 : 503;
    ctx.body = { status: deps.lifecycle.draining ? 'draining' : ready ? 'ready' : 'not_ready', checks };
  });
  router.get('/metrics', async (ctx) => {
    ctx.type = deps.metrics.registry.contentType;
    ctx.body = await deps.metrics.registry.metrics();
  });
  return router;
}
