import { Router } from '@koa/router';
import { WithStartWorkflowOperation, WorkflowNotFoundError } from '@temporalio/client';
import { getAvailability, getProduct } from '../../activities/inventory';
import {
  getPurchase,
  openPurchase,
  purchaseIdFor,
  type PurchaseRecord,
  type PurchaseRequest,
} from '../../activities/purchases';
import {
  BuyerIdKey,
  cancelSignal,
  checkoutReadyUpdate,
  FINAL_STATUSES,
  PAID_STATUSES,
  purchaseWorkflowId,
  SkuKey,
  PurchaseStatusKey,
  type PurchaseState,
} from '../../workflows/definitions';
import type { purchaseWorkflow } from '../../workflows/purchase';
import type { ApiDeps } from '../deps';
import { invalid, Problem } from '../problem';
import { validator } from '../validate';

const purchaseBody = validator<PurchaseRequest>({
  type: 'object',
  additionalProperties: false,
  required: ['sku', 'buyerId'],
  properties: {
    sku: { type: 'string', minLength: 1, maxLength: 64, pattern: '^[^\\u0000-\\u001f]+$' },
    buyerId: { type: 'string', minLength: 1, maxLength: 128, pattern: '^[^\\u0000-\\u001f]+$' },
    quantity: { type: 'integer', minimum: 1, maximum: 1000, default: 1 },
    unitId: { type: 'string', minLength: 1, maxLength: 64, nullable: true, pattern: '^[^\\u0000-\\u001f]+$' },
  },
});

/** Remembers for a moment that a SKU is exhausted, so the crowd after the last unit never reaches Temporal or the hot row. */
export class SoldOutCache {
  private readonly until = new Map<string, number>();
  constructor(private readonly ttlMs = 500) {}
  isSoldOut(sku: string): boolean {
    const t = this.until.get(sku);
    if (t === undefined) return false;
    if (t > Date.now()) return true;
    this.until.delete(sku);
    return false;
  }
  markSoldOut(sku: string): void {
    this.until.set(sku, Date.now() + this.ttlMs);
  }
  forget(sku: string): void {
    this.until.delete(sku);
  }
}

function rejectionProblem(state: PurchaseState, heldBy?: string): Problem {
  const extra = { purchaseId: state.purchaseId, ...(heldBy ? { heldBy } : {}) };
  switch (state.rejection) {
    case 'sold_out':
      return new Problem(409, 'sold-out', `${state.sku} is sold out`, extra);
    case 'hold_exists':
      return new Problem(409, 'hold-exists', `buyer ${state.buyerId} already holds ${state.sku}`, extra);
    case 'limit_exceeded':
      return new Problem(
        422,
        'limit-exceeded',
        `buyer ${state.buyerId} would exceed the per-buyer limit of ${state.sku}`,
        extra,
      );
    case 'unit_unavailable':
      return new Problem(409, 'sold-out', `that unit of ${state.sku} is taken`, extra);
    case 'product_not_found':
      return new Problem(404, 'product-not-found', `no product with SKU ${state.sku}`, extra);
    default:
      return new Problem(409, 'sold-out', state.reason ?? 'refused', extra);
  }
}

/** The public view of a purchase (GET /v1/purchases/:id and the POST answers). */
export function purchaseView(p: PurchaseState) {
  return {
    purchaseId: p.purchaseId,
    sku: p.sku,
    buyerId: p.buyerId,
    quantity: p.quantity,
    status: p.status === 'rejected' ? 'failed' : p.status,
    holdExpiresAt: p.holdExpiresAt ?? null,
    ...(p.checkoutUrl && (p.status === 'awaiting_payment' || p.status === 'holding')
      ? { checkoutUrl: p.checkoutUrl }
      : {}),
    amountCents: p.amountCents ?? null,
    currency: p.currency ?? null,
    ...(p.reason ? { reason: p.reason } : {}),
    ...(p.refund ? { refund: { status: p.refund.status, reason: p.refund.reason } } : {}),
    ...(p.oversold ? { oversold: true } : {}),
  };
}

function timeout<T>(ms: number, what: string, p: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout;
  return Promise.race([
    p.finally(() => clearTimeout(timer)),
    new Promise<T>((_, reject) => {
      timer = setTimeout(
        () => reject(new Problem(503, 'unavailable', `${what} took longer than ${ms} ms`, {}, { 'Retry-After': '2' })),
        ms,
      );
    }),
  ]);
}

/**
 * Purchase routes. POST takes the hold and opens the Checkout Session in one round trip by
 * starting the purchase workflow and waiting on its `checkoutReady` update (update-with-start);
 * the workflow id comes from the Idempotency-Key, so a retried POST joins the same purchase.
 */
export function purchaseRoutes(deps: ApiDeps, soldOut: SoldOutCache): Router {
  const router = new Router();
  const workflows = deps.temporal.workflow;

  async function answer(state: PurchaseState | PurchaseRecord, created: boolean) {
    if (state.status === 'rejected') {
      // For `hold-exists`, name the purchase the buyer holds, so they (or support) can find it.
      const heldBy =
        state.rejection === 'hold_exists'
          ? (
              await deps.db.query<{ purchase_id: string }>(
                `SELECT purchase_id FROM holds WHERE sku = $1 AND buyer_id = $2 AND status = 'active'`,
                [state.sku, state.buyerId],
              )
            ).rows[0]?.purchase_id
          : undefined;
      throw rejectionProblem(state, heldBy);
    }
    if (state.status === 'failed' && !state.checkoutUrl) {
      // Final for this key (its hold was released): the buyer starts again with a new key.
      throw new Problem(
        503,
        'unavailable',
        `${state.reason ?? 'the purchase could not be started'}; try again with a new Idempotency-Key`,
        { purchaseId: state.purchaseId, retryWithNewKey: true },
        // API.md: every 503 carries Retry-After; `retryWithNewKey` says this key will not succeed.
        { 'Retry-After': '5' },
      );
    }
    return { status: created ? 201 : 200, body: purchaseView(state) };
  }

  router.post('/v1/purchases', async (ctx) => {
    const started = process.hrtime.bigint();
    const key = ctx.get('idempotency-key');
    if (!key) throw invalid([{ field: 'Idempotency-Key', message: 'header is required' }]);
    if (key.length > 255) throw invalid([{ field: 'Idempotency-Key', message: 'must be at most 255 characters' }]);
    const req = purchaseBody(ctx.request.body);

    // A retry of a known key is answered from its purchase, before any shortcut below.
    const known = await getPurchase(deps.db, purchaseIdFor(key));
    // Sold-out fast path for new keys: no workflow, no write, no lock, when nothing can come back.
    if (!known && soldOut.isSoldOut(req.sku)) {
      deps.metrics.purchaseRequests.inc({ outcome: 'sold_out_fast' });
      throw new Problem(409, 'sold-out', `${req.sku} is sold out`);
    }
    const product = await getProduct(deps.db, req.sku);
    if (!product) throw new Problem(404, 'product-not-found', `no product with SKU ${req.sku}`);
    if (req.quantity > product.maxPerBuyer) {
      throw new Problem(422, 'limit-exceeded', `at most ${product.maxPerBuyer} of ${req.sku} per buyer`);
    }
    if (req.unitId && !product.hasUnits)
      throw invalid([{ field: 'unitId', message: `${req.sku} has no distinct units` }]);
    if (req.unitId && req.quantity !== 1)
      throw invalid([{ field: 'quantity', message: 'must be 1 when unitId is given' }]);

    const opened = await openPurchase(deps.db, key, req);
    if (!opened.created && !opened.sameRequest) {
      throw invalid([{ field: 'Idempotency-Key', message: 'was already used for a different request' }]);
    }
    if (!opened.created && FINAL_STATUSES.includes(opened.record.status)) {
      const r = await answer(opened.record, false);
      ctx.status = r.status;
      ctx.body = r.body;
      return;
    }
    if (opened.created) {
      const a = await getAvailability(deps.db, req.sku);
      if (a?.exhausted) {
        soldOut.markSoldOut(req.sku);
        // Recorded as refused so the same key answers the same way, without a workflow.
        await deps.db.query(
          `UPDATE purchases SET status = 'rejected', rejection = 'sold_out', reason = 'sold out' WHERE purchase_id = $1`,
          [opened.record.purchaseId],
        );
        deps.metrics.purchaseRequests.inc({ outcome: 'sold_out_fast' });
        throw new Problem(409, 'sold-out', `${req.sku} is sold out`, { purchaseId: opened.record.purchaseId });
      }
    }

    const purchaseId = opened.record.purchaseId;
    const start = new WithStartWorkflowOperation<typeof purchaseWorkflow>('purchaseWorkflow', {
      workflowId: purchaseWorkflowId(purchaseId),
      taskQueue: deps.taskQueue,
      args: [{ purchaseId, sku: req.sku, buyerId: req.buyerId, quantity: req.quantity, unitId: req.unitId }],
      workflowIdConflictPolicy: 'USE_EXISTING',
      workflowIdReusePolicy: 'REJECT_DUPLICATE',
      typedSearchAttributes: [
        { key: SkuKey, value: req.sku },
        { key: BuyerIdKey, value: req.buyerId },
        { key: PurchaseStatusKey, value: 'holding' },
      ],
    });
    let state: PurchaseState;
    try {
      state = await timeout(
        deps.checkoutTimeoutMs ?? 20_000,
        'taking the hold and opening checkout',
        workflows.executeUpdateWithStart(checkoutReadyUpdate, { startWorkflowOperation: start }),
      );
    } catch (err) {
      // A closed workflow (REJECT_DUPLICATE) has its outcome in the record.
      const record = await getPurchase(deps.db, purchaseId);
      if (record && FINAL_STATUSES.includes(record.status)) {
        state = record;
      } else if (err instanceof Problem) {
        throw err;
      } else {
        deps.log(`purchase ${purchaseId}: could not reach its workflow`, err);
        throw new Problem(
          503,
          'unavailable',
          'the purchase service is busy; retry with the same Idempotency-Key',
          {},
          {
            'Retry-After': '2',
          },
        );
      }
    }
    const r = await answer(state, opened.created);
    deps.metrics.purchaseRequests.inc({ outcome: opened.created ? 'created' : 'replayed' });
    if (opened.created) deps.metrics.checkoutSeconds.observe(Number(process.hrtime.bigint() - started) / 1e9);
    ctx.status = r.status;
    ctx.body = r.body;
  });

  router.get('/v1/purchases/:id', async (ctx) => {
    const record = await getPurchase(deps.db, ctx.params.id);
    if (!record || record.status === 'rejected')
      throw new Problem(404, 'purchase-not-found', `no purchase ${ctx.params.id}`);
    ctx.body = purchaseView(record);
  });

  /** The buyer gives up: the workflow releases the hold and expires the session. 409 once paid. */
  router.post('/v1/purchases/:id/cancel', async (ctx) => {
    const id = ctx.params.id;
    const record = await getPurchase(deps.db, id);
    if (!record || record.status === 'rejected') throw new Problem(404, 'purchase-not-found', `no purchase ${id}`);
    if (PAID_STATUSES.includes(record.status)) {
      throw new Problem(409, 'not-cancellable', `purchase ${id} is ${record.status}`);
    }
    if (FINAL_STATUSES.includes(record.status)) {
      ctx.body = purchaseView(record);
      return;
    }
    try {
      await workflows.getHandle(purchaseWorkflowId(id)).signal(cancelSignal);
    } catch (err) {
      // The saga closed a moment ago (paid, say): answer from its record. Anything else is Temporal being unreachable.
      if (!(err instanceof WorkflowNotFoundError)) {
        deps.log(`cancel ${id}: could not signal its workflow`, err);
        throw new Problem(503, 'unavailable', 'could not reach the purchase; try again', {}, { 'Retry-After': '2' });
      }
    }
    // Answer with the outcome when the saga settles quickly (it normally does), else with what we know.
    const deadline = Date.now() + 5000;
    let now = record;
    while (Date.now() < deadline && !FINAL_STATUSES.includes(now.status)) {
      await new Promise((r) => setTimeout(r, 50));
      now = (await getPurchase(deps.db, id))!;
    }
    if (PAID_STATUSES.includes(now.status)) {
      throw new Problem(409, 'not-cancellable', `purchase ${id} was paid`);
    }
    ctx.body = purchaseView(now);
  });

  return router;
}
