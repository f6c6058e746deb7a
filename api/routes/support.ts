import { Router } from '@koa/router';
import { requireBearer } from '../auth';
import type { ApiDeps } from '../deps';
import { Problem } from '../problem';
import { requestSupportRefund } from '../../client/refunds';
import { validator } from '../validate';

// The reason is free text pasted by a person (line breaks, tabs): it is sanitised, not refused.
// Control characters become spaces and lone surrogates U+FFFD (Postgres's jsonb refuses both), the
// ends are trimmed; a reason with nothing visible left is 400 naming `reason`.
const refundBody = validator<{ reason: string; restock: boolean }>(
  {
    type: 'object',
    additionalProperties: false,
    required: ['reason', 'restock'],
    properties: {
      reason: { type: 'string', minLength: 1, maxLength: 500 },
      restock: { type: 'boolean' },
    },
  },
  { sanitise: ['reason'] },
);

/** Support routes (SUPPORT_TOKEN): refunds through their own idempotent saga, with an audit trail. */
export function supportRoutes(deps: ApiDeps): Router {
  const router = new Router();
  router.post('/v1/support/purchases/:id/refund', requireBearer(deps.supportToken, 'support'), async (ctx) => {
    const body = refundBody(ctx.request.body);
    const answer = await requestSupportRefund(deps, {
      purchaseId: ctx.params.id,
      reason: body.reason,
      restock: body.restock,
      actor: `support-api:${ctx.ip}`,
    });
    if (answer.outcome === 'not_found') throw new Problem(404, 'purchase-not-found', `no purchase ${ctx.params.id}`);
    if (answer.outcome === 'not_refundable') throw new Problem(409, 'not-refundable', answer.detail);
    if (answer.restocked) await deps.admissions.stockChanged(answer.sku);
    ctx.status = 202;
    ctx.body = {
      purchaseId: answer.purchaseId,
      refund: answer.refund,
      ...(answer.restocked !== undefined ? { restocked: answer.restocked } : {}),
    };
  });
  return router;
}
