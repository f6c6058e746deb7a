import { Router } from '@koa/router';
import { requireBearer } from '../auth';
import type { ApiDeps } from '../deps';
import { Problem } from '../problem';
import { requestSupportRefund } from '../../client/refunds';
import { findPurchases, type PurchaseLookup } from '../../store/purchases';
import { invalid } from '../problem';
import { validator } from '../validate';
import { purchaseView, refundView } from '../purchase-answers';

// The reason (the buyer's message, sent word for word) and the note (support's own, kept in the audit
// trail) are free text pasted by a person (line breaks, tabs): they are sanitised, not refused.
// Control characters become spaces and lone surrogates U+FFFD (Postgres's jsonb refuses both), the
// ends are trimmed; one with nothing visible left is 400 naming it.
const refundBody = validator<{ reason: string; restock: boolean; note?: string }>(
  {
    type: 'object',
    additionalProperties: false,
    required: ['reason', 'restock'],
    properties: {
      reason: { type: 'string', minLength: 1, maxLength: 500 },
      restock: { type: 'boolean' },
      note: { type: 'string', minLength: 1, maxLength: 500, nullable: true },
    },
  },
  { sanitise: ['reason', 'note'] },
);

const KEYS = ['buyerId', 'sessionId', 'paymentIntentId'] as const;
const key = { type: 'string', minLength: 1, maxLength: 256 } as const;
// Query values are strings (a repeated parameter is an array, refused); control characters are refused
// before the schema, like every string of a body.
const lookupQuery = validator<{ buyerId?: string; sessionId?: string; paymentIntentId?: string }>({
  type: 'object',
  additionalProperties: false,
  properties: {
    buyerId: { ...key, nullable: true },
    sessionId: { ...key, nullable: true },
    paymentIntentId: { ...key, nullable: true },
  },
});

/** Exactly one of buyerId, sessionId, paymentIntentId: what support looks a purchase up by. */
function lookupOf(query: unknown): PurchaseLookup {
  const q = lookupQuery({ ...(query as object) });
  const given = KEYS.filter((k) => q[k] !== undefined);
  if (given.length !== 1) {
    const field = given.length === 0 ? 'query' : given[1];
    throw invalid([{ field, message: `give exactly one of ${KEYS.join(', ')}` }]);
  }
  const k = given[0];
  return { [k]: q[k]! } as PurchaseLookup;
}

/** Support routes (SUPPORT_TOKEN): purchase lookup, and refunds through their own idempotent saga, with an audit trail. */
export function supportRoutes(deps: ApiDeps): Router {
  const router = new Router();
  router.get('/v1/support/purchases', requireBearer(deps.supportToken, 'support'), async (ctx) => {
    const found = await findPurchases(deps.db, lookupOf(ctx.query));
    ctx.body = { data: found.map((p) => purchaseView(p)) };
  });
  router.post('/v1/support/purchases/:id/refund', requireBearer(deps.supportToken, 'support'), async (ctx) => {
    const body = refundBody(ctx.request.body);
    const answer = await requestSupportRefund(deps, {
      purchaseId: ctx.params.id,
      reason: body.reason,
      restock: body.restock,
      ...(body.note ? { note: body.note } : {}),
      actor: `support-api:${ctx.ip}`,
    });
    if (answer.outcome === 'not_found') throw new Problem(404, 'purchase-not-found', `no purchase ${ctx.params.id}`);
    if (answer.outcome === 'not_refundable') throw new Problem(409, 'not-refundable', answer.detail);
    if (answer.outcome === 'needs_attention') {
      throw new Problem(409, 'not-refundable', answer.detail, {
        purchaseStatus: 'needs_attention',
        refund: answer.refund,
      });
    }
    if (answer.restocked) await deps.admissions.stockChanged(answer.sku);
    ctx.status = 202;
    ctx.body = {
      purchaseId: answer.purchaseId,
      refund: refundView(answer.refund),
      ...(answer.restocked !== undefined ? { restocked: answer.restocked } : {}),
    };
  });
  return router;
}
