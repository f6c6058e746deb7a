import { Router } from '@koa/router';
import { WorkflowNotFoundError } from '@temporalio/client';
import { beginPurchase, cancelPurchase, checkoutReady, startPurchase } from '../../client/purchases';
import type { Admission } from '../../store/admission';
import { getPurchase } from '../../store/purchases';
import { isFinal, isPaid, type PurchaseRequest, type PurchaseState } from '../../vocabulary';
import { buyerOf, readerOf } from '../auth';
import type { ApiDeps } from '../deps';
import { invalid, Problem } from '../problem';
import { validator } from '../validate';

/** How long a cancel waits for the saga to give the hold back before answering with what it knows. */
const CANCEL_TIMEOUT_MS = 5_000;

const text = (maxLength: number) =>
  ({ type: 'string', minLength: 1, maxLength, pattern: '^[^\\u0000-\\u001f]+$' }) as const;

/** The body of POST /v1/purchases: the buyer is the token's; a `buyerId` sent must be the same. */
const purchaseBody = validator<Omit<PurchaseRequest, 'buyerId'> & { buyerId?: string }>({
  type: 'object',
  additionalProperties: false,
  required: ['sku'],
  properties: {
    sku: text(64),
    buyerId: { ...text(128), nullable: true },
    quantity: { type: 'integer', minimum: 1, maximum: 1000, default: 1 },
    unitId: { ...text(64), nullable: true },
  },
});

const unavailable = (detail: string, extra: Record<string, unknown> = {}, retryAfter = '2') =>
  new Problem(503, 'unavailable', detail, extra, { 'Retry-After': retryAfter });

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
    ...(p.dispute ? { dispute: { status: p.dispute.status, reason: p.dispute.reason } } : {}),
    ...(p.oversold ? { oversold: true } : {}),
  };
}

/** A refusal decided before any saga ran: nothing was written for it. */
function admissionProblem(a: Exclude<Admission, { outcome: 'new' | 'known' }>): Problem {
  switch (a.outcome) {
    case 'hold_exists':
      return new Problem(409, 'hold-exists', a.detail, { heldBy: a.heldBy });
    case 'invalid':
      return invalid([{ field: a.field, message: a.message }]);
    case 'not_admitted':
      return new Problem(403, 'not-admitted', a.detail);
    case 'sold_out': {
      if (a.final || !a.retryAt) return new Problem(409, 'sold-out', a.detail, { final: true });
      const wait = Math.max(1, Math.ceil((a.retryAt.getTime() - Date.now()) / 1000));
      return new Problem(
        409,
        'sold-out',
        a.detail,
        { final: false, retryAt: a.retryAt.toISOString() },
        { 'Retry-After': String(wait) },
      );
    }
    case 'refused':
      return a.reason === 'product_not_found'
        ? new Problem(404, 'product-not-found', a.detail)
        : new Problem(422, 'limit-exceeded', a.detail);
  }
}

/** A saga's answer as HTTP: the refusal its hold step met, a failure final for this key, or the purchase. */
function sagaAnswer(state: PurchaseState, created: boolean): { status: number; body: unknown } {
  const extra = { purchaseId: state.purchaseId, ...(state.heldBy ? { heldBy: state.heldBy } : {}) };
  if (state.status === 'rejected') {
    switch (state.rejection) {
      case 'hold_exists':
        throw new Problem(409, 'hold-exists', `buyer ${state.buyerId} already holds ${state.sku}`, extra);
      case 'limit_exceeded':
        throw new Problem(
          422,
          'limit-exceeded',
          `buyer ${state.buyerId} would exceed the per-buyer limit of ${state.sku}`,
          extra,
        );
      case 'unit_unavailable':
        throw new Problem(409, 'sold-out', `that unit of ${state.sku} is taken`, extra);
      case 'product_not_found':
        throw new Problem(404, 'product-not-found', `no product with SKU ${state.sku}`, extra);
      default: {
        // The hold step found nothing free: units may still be held by others and come back.
        const retryAt = new Date(Date.now() + 1000).toISOString();
        throw new Problem(
          409,
          'sold-out',
          `${state.sku} is sold out`,
          { ...extra, final: false, retryAt },
          { 'Retry-After': '1' },
        );
      }
    }
  }
  if (state.status === 'failed' && !state.checkoutUrl) {
    // Final for this key (its hold was released): the buyer starts again with a new key.
    const detail = `${state.reason ?? 'the purchase could not be started'}; try again with a new Idempotency-Key`;
    // `retryWithNewKey` says this key will not succeed; every 503 still carries Retry-After.
    throw unavailable(detail, { purchaseId: state.purchaseId, retryWithNewKey: true }, '5');
  }
  return { status: created ? 201 : 200, body: purchaseView(state) };
}

/** The gate's answer, for the funnel metrics. */
function gateOutcome(a: Admission): string {
  if (a.outcome === 'sold_out') return a.final ? 'sold_out_final' : 'sold_out_retry';
  if (a.outcome === 'new') return 'permit';
  return a.outcome === 'known' ? 'known_key' : a.outcome;
}

/** A new saga's hold step answered: count the hold and the session it opened. */
function countHold(deps: ApiDeps, state: PurchaseState): void {
  if (state.status === 'rejected') deps.metrics.holdsRefused.inc({ rejection: state.rejection ?? 'unknown' });
  else if (state.checkoutUrl) deps.metrics.sessionsOpened.inc();
}

function deadline<T>(ms: number, what: string, p: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout;
  return Promise.race([
    p.finally(() => clearTimeout(timer)),
    new Promise<T>((_, reject) => {
      timer = setTimeout(() => reject(unavailable(`${what} took longer than ${ms} ms`)), ms);
    }),
  ]);
}

/**
 * Purchase routes. POST admits the request (store), then starts the purchase saga and waits until
 * its hold is taken and its Checkout Session open (update-with-start). The purchase id comes from
 * the Idempotency-Key, so a retried POST joins the same purchase and never takes a second hold.
 */
export function purchaseRoutes(deps: ApiDeps): Router {
  const router = new Router();
  const sagas = { temporal: deps.temporal, taskQueue: deps.taskQueue };

  router.post('/v1/purchases', async (ctx) => {
    const started = process.hrtime.bigint();
    const buyerId = await buyerOf(ctx, deps.buyers);
    await deps.rateLimits?.take(buyerId, ctx.ip);
    const key = ctx.get('idempotency-key');
    if (!key) throw invalid([{ field: 'Idempotency-Key', message: 'header is required' }]);
    if (key.length > 255) throw invalid([{ field: 'Idempotency-Key', message: 'must be at most 255 characters' }]);
    const body = purchaseBody(ctx.request.body);
    if (body.buyerId != null && body.buyerId !== buyerId) {
      throw new Problem(403, 'forbidden', 'buyerId must be the buyer of the token (or be left out)');
    }
    const req: PurchaseRequest = { ...body, buyerId };

    const respondAsync = /\brespond-async\b/i.test(ctx.get('prefer'));

    // Verified here, without a read: whether it was already spent is decided as the purchase is recorded.
    const ticket = await deps.room.admissionOf(ctx.get('admission-token') || undefined, buyerId, req.sku);
    const admission = await deps.admissions.admit(key, req, ticket);
    deps.metrics.gateAnswers.inc({ outcome: gateOutcome(admission) });
    if (admission.outcome !== 'new' && admission.outcome !== 'known') throw admissionProblem(admission);
    const { record } = admission;
    const created = admission.outcome === 'new';
    const input = { purchaseId: record.purchaseId, ...req, ...(created ? { terms: admission.terms } : {}) };
    const permit = created ? admission.permit : undefined;
    if (created) deps.metrics.sagasStarted.inc();

    if (respondAsync && !isFinal(record.status)) {
      try {
        await beginPurchase(sagas, input);
      } catch (err) {
        permit?.settle();
        const now = await getPurchase(deps.db, record.purchaseId);
        if (!now || !isFinal(now.status)) {
          deps.log(`purchase ${record.purchaseId}: could not start its workflow`, err);
          throw unavailable('the purchase service is busy; retry with the same Idempotency-Key');
        }
      }
      // The permit is held until the saga's hold step has answered, in the background.
      if (permit) {
        deadline(deps.purchaseTimeoutMs, 'the hold', checkoutReady(sagas, record.purchaseId))
          .then((state) => countHold(deps, state))
          .catch(() => {})
          .finally(() => permit.settle());
      }
      ctx.status = 202;
      ctx.set('Location', `/v1/purchases/${record.purchaseId}`);
      ctx.body = {
        purchaseId: record.purchaseId,
        status: record.status,
        ...(record.holdExpiresAt ? { holdExpiresAt: record.holdExpiresAt } : {}),
      };
      return;
    }

    let state: PurchaseState = record;
    if (!isFinal(record.status)) {
      try {
        state = await deadline(
          deps.purchaseTimeoutMs,
          'taking the hold and opening checkout',
          startPurchase(sagas, input),
        );
        if (created) countHold(deps, state);
      } catch (err) {
        // A closed saga (REJECT_DUPLICATE) has its outcome in the record.
        const now = await getPurchase(deps.db, record.purchaseId);
        if (now && isFinal(now.status)) state = now;
        else if (err instanceof Problem) throw err;
        else {
          deps.log(`purchase ${record.purchaseId}: could not reach its workflow`, err);
          throw unavailable('the purchase service is busy; retry with the same Idempotency-Key');
        }
      } finally {
        permit?.settle();
      }
    }
    const answer = sagaAnswer(state, created);
    if (created) deps.metrics.checkoutSeconds.observe(Number(process.hrtime.bigint() - started) / 1e9);
    ctx.status = answer.status;
    ctx.body = answer.body;
  });

  /** A purchase as its buyer (or support) sees it; anyone else is told it does not exist. */
  const visible = async (id: string, reader: { support: boolean; buyerId?: string }) => {
    const record = await getPurchase(deps.db, id);
    if (!record || record.status === 'rejected' || (!reader.support && record.buyerId !== reader.buyerId))
      throw new Problem(404, 'purchase-not-found', `no purchase ${id}`);
    return record;
  };

  router.get('/v1/purchases/:id', async (ctx) => {
    ctx.body = purchaseView(await visible(ctx.params.id, await readerOf(ctx, deps)));
  });

  /** The buyer gives up: the saga releases the hold and expires the session (a cancel update). 409 once paid. */
  router.post('/v1/purchases/:id/cancel', async (ctx) => {
    const id = ctx.params.id;
    const record = await visible(id, { support: false, buyerId: await buyerOf(ctx, deps.buyers) });
    if (isPaid(record.status)) throw new Problem(409, 'not-cancellable', `purchase ${id} is ${record.status}`);
    if (isFinal(record.status)) {
      ctx.body = purchaseView(record);
      return;
    }
    let now: PurchaseState;
    try {
      now = await deadline(CANCEL_TIMEOUT_MS, 'cancelling the purchase', cancelPurchase(sagas, id));
    } catch (err) {
      // The saga closed a moment ago (paid, say), or is slow to settle: answer from its record.
      if (!(err instanceof WorkflowNotFoundError) && !(err instanceof Problem)) {
        const closed = (await getPurchase(deps.db, id))!;
        if (!isFinal(closed.status)) {
          deps.log(`cancel ${id}: could not reach its workflow`, err);
          throw unavailable('could not reach the purchase; try again');
        }
      }
      now = (await getPurchase(deps.db, id))!;
    }
    if (isPaid(now.status)) throw new Problem(409, 'not-cancellable', `purchase ${id} was paid`);
    ctx.body = purchaseView(now);
  });

  return router;
}
