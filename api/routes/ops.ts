import fs from 'node:fs';
import path from 'node:path';
import { Router } from '@koa/router';
import type Koa from 'koa';
import { ping } from '../../store/db';
import { requireBearer } from '../auth';
import { invalid } from '../problem';
import type { ApiDeps } from '../deps';

/** Each readiness check answers within this long, or counts as failed: /readyz itself answers within 2 s. */
export const READY_CHECK_MS = 1_500;

/** The HTTP contract as an OpenAPI 3.1 document, read once when the process starts. */
const OPENAPI_DOCUMENT = fs.readFileSync(path.join(__dirname, '../../docs/openapi.json'));

/**
 * /healthz (alive), /readyz (Postgres and Temporal reachable, not draining; with `?scope=process`,
 * not draining whatever they say: for an orchestrator whose Service would otherwise drop every
 * process at once when a dependency they all share stops, leaving no one to answer 503 with
 * Retry-After), /metrics (Prometheus;
 * with `Authorization: Bearer <METRICS_TOKEN>` when one is set, else 401), /openapi.json (the HTTP
 * contract, docs/openapi.json).
 */
export function opsRoutes(deps: ApiDeps): Router {
  const router = new Router();
  router.get('/healthz', (ctx) => {
    ctx.body = { status: 'ok' };
  });
  router.get('/readyz', async (ctx) => {
    const scope = ctx.query.scope ?? 'dependencies';
    if (scope !== 'dependencies' && scope !== 'process') {
      throw invalid([{ field: 'scope', message: 'must be dependencies (the default) or process' }]);
    }
    const checks: Record<string, string> = {};
    const probe = async (name: string, fn: () => Promise<unknown>) => {
      try {
        await Promise.race([
          fn(),
          new Promise((_, j) => setTimeout(() => j(new Error('timed out')), READY_CHECK_MS).unref()),
        ]);
        checks[name] = 'ok';
      } catch (err) {
        checks[name] = (err as Error).message;
      }
    };
    await Promise.all([
      probe('postgres', () => ping(deps.db)),
      probe('temporal', () =>
        deps.temporal.withDeadline(Date.now() + READY_CHECK_MS, () => deps.temporal.workflowService.getSystemInfo({})),
      ),
    ]);
    const ready = !deps.lifecycle.draining && (scope === 'process' || Object.values(checks).every((v) => v === 'ok'));
    ctx.status = ready ? 200 : 503;
    // A draining process says 503 on purpose, to every probe of every balancer: not a warn line each.
    if (deps.lifecycle.draining) ctx.state.expectedFailure = true;
    ctx.body = { status: deps.lifecycle.draining ? 'draining' : ready ? 'ready' : 'not_ready', checks };
  });
  const metricsAccess: Koa.Middleware = deps.metricsToken
    ? requireBearer(deps.metricsToken, 'metrics')
    : (_, next) => next();
  router.get('/metrics', metricsAccess, async (ctx) => {
    ctx.type = deps.metrics.registry.contentType;
    ctx.body = await deps.metrics.registry.metrics();
  });
  router.get('/openapi.json', (ctx) => {
    ctx.body = OPENAPI_DOCUMENT;
    ctx.type = 'application/json';
  });
  return router;
}
