import { beginPurchase, startPurchase, type SagaClient } from '../client/purchases';
import type { Logger } from '../config/log';
import { checkForBots } from './bot-check';
import type { Admission } from '../store/admission';
import { takeCheckoutSlot } from '../store/checkout-line';
import { getPurchase, purchaseIdFor, type PurchaseRecord } from '../store/purchases';
import { isFinal, type PurchaseInput, type PurchaseRequest, type PurchaseState } from '../vocabulary';
import { checkoutQueueView, DEFAULT_CHECKOUTS_PER_SECOND } from './checkout-pace';
import type { ApiDeps } from './deps';
import { admissionProblem, sagaAnswer, unavailable, waitingForCheckout, type PlacedPurchase } from './purchase-answers';
import { invalid, Problem } from './problem';
import { idempotencyKeyFaults } from './request-guard';
import { validator } from './validate';

// Making a purchase, once for every door that makes one: POST /v1/purchases (JSON, bearer token) and
// the Buy form of the product page (POST /p/:sku/buy, the buyer's cookie). Both call placePurchase;
// only how the buyer, key and body arrive and how the answer is written differ.

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

/**
 * A checkout slot this close is the purchase's now: its saga starts at once and the buyer waits for the
 * hold and the URL (201); a later one is answered 202 at once with its place in line. A quarter second
 * keeps a few buyers at once (5 at 20/s) on 201. It was 1 s: the first buyers of a burst (11 at 10/s)
 * then waited for their hold and session while the line behind them was answered, the last winner told
 * after 9.5 to 20 s at a Stripe of 10/s, against 2.7 s now (bench:crowd --stripe-rate 10, loaded machine).
 */
const START_NOW_WITHIN_MS = 250;
/**
 * Slots come this much faster than the budget: the Stripe queue's rate limit is the exact edge, and
 * a short line in front of it keeps it busy (two limiters at one rate in a row lose every gap for
 * good: measured 1.15x Stripe's floor for 200 checkouts at 10/s, against 1.0x with the line). A
 * hold waits at most this share longer for its session than the budget alone implies.
 */
const PACE_AHEAD = 1.1;

/** The gate's answer, for the funnel metrics. */
function gateOutcome(a: Admission): string {
  if (a.outcome === 'sold_out') return a.final ? 'sold_out_final' : 'sold_out_retry';
  if (a.outcome === 'new') return 'permit';
  return a.outcome === 'known' ? 'known_key' : a.outcome;
}

/** A new saga's hold step refused: counted. (Its session, once open, is counted by the worker that opened it.) */
function countRefusal(deps: ApiDeps, state: PurchaseState): void {
  if (state.status === 'rejected') deps.metrics.holdsRefused.inc({ rejection: state.rejection ?? 'unknown' });
}

/**
 * `p`, or a 503 once `ms` pass or the API's listener closes (`closing`, api/shutdown.ts), whichever
 * is first: the work goes on, the request stops waiting for it.
 */
export function deadline<T>(ms: number, what: string, p: Promise<T>, closing?: AbortSignal): Promise<T> {
  let timer: NodeJS.Timeout;
  let onClose = (): void => {};
  return Promise.race([
    p.finally(() => {
      clearTimeout(timer);
      closing?.removeEventListener('abort', onClose);
    }),
    new Promise<T>((_, reject) => {
      timer = setTimeout(() => reject(unavailable(`${what} took longer than ${ms} ms`)), ms);
      onClose = () => reject(unavailable(`${what}: this API instance is shutting down`));
      if (closing?.aborted) onClose();
      else closing?.addEventListener('abort', onClose, { once: true });
    }),
  ]);
}

/** One purchase order as a door received it: who, from where, with which key, asking for what. */
export interface PurchaseOrder {
  /** The verified buyer (the token's `sub`). */
  buyerId: string;
  /** The client's address, for the per-IP rate limit. */
  ip: string;
  /** As sent: checked here (required, no control characters, at most 255 characters). */
  idempotencyKey: string;
  /** What a refusal of the key names: the header (default), or the Buy form's field. */
  keyField?: string;
  /** As sent, checked here against the body schema of POST /v1/purchases. */
  body: unknown;
  /** Answer as soon as the purchase is accepted (202), without waiting for the hold and the session. */
  respondAsync: boolean;
  /**
   * The waiting room's Admission-Token (header, or the queue page's Buy form): a product with a room
   * needs one bound to this buyer and SKU, good for one purchase (403 `not-admitted` otherwise).
   */
  admissionToken?: string;
  /**
   * The bot check's solution (header `Altcha`, or the widget's form field): a product with `botCheck`
   * and no waiting room needs one, good once (403 `bot-check-failed` otherwise).
   */
  altcha?: string;
  /** The request's id, carried into the saga's log lines. */
  requestId?: string;
  /** The request's logger (its lines carry the request id). */
  log: Logger;
}

/**
 * Makes (or finds again, by its Idempotency-Key) a purchase: rate limits, the key and body checks,
 * admission by the gate, then the saga, started and waited for until its hold is taken and its
 * Checkout Session open (update-with-start), or only started with `respondAsync`. Throws a Problem
 * for every refusal (sold out, limit, hold exists, bad input, busy), with the contract's `type`.
 */
export async function placePurchase(deps: ApiDeps, order: PurchaseOrder): Promise<PlacedPurchase> {
  const sagas = { temporal: deps.temporal, taskQueue: deps.taskQueue };
  const { buyerId, respondAsync } = order;
  await deps.rateLimits?.take(buyerId, order.ip);
  const key = order.idempotencyKey;
  const keyFaults = idempotencyKeyFaults(key, order.keyField);
  if (keyFaults.length) throw invalid(keyFaults);
  const body = purchaseBody(order.body);
  if (body.buyerId != null && body.buyerId !== buyerId) {
    throw new Problem(403, 'forbidden', 'buyerId must be the buyer of the token (or be left out)');
  }
  const req: PurchaseRequest = { ...body, buyerId };
  // Spent for this purchase id: a retry of the same key with the same solution passes again.
  await checkForBots(deps, 'purchase', {
    sku: req.sku,
    payload: order.altcha,
    spentBy: purchaseIdFor(key, buyerId),
  });

  // Verified here, without a read: whether it was already spent is decided as the purchase is recorded.
  const ticket = await deps.room.admissionOf(order.admissionToken, buyerId, req.sku);
  const admission = await deps.admissions.admit(key, req, ticket);
  deps.metrics.gateAnswers.inc({ outcome: gateOutcome(admission) });
  if (admission.outcome !== 'new' && admission.outcome !== 'known') throw admissionProblem(admission, deps.clock.now());
  const { record } = admission;
  const created = admission.outcome === 'new';
  // A retry whose first start never reached Temporal starts the saga now: with the terms too (cached per SKU).
  const terms = created ? admission.terms : (await deps.admissions.rulesOf(req.sku))?.terms;
  const input = {
    purchaseId: record.purchaseId,
    ...req,
    ...(terms ? { terms } : {}),
    ...(order.requestId ? { requestId: order.requestId } : {}),
  };
  const permit = created ? admission.permit : undefined;
  if (created) deps.metrics.sagasStarted.inc();

  // Its turn in the Stripe budget's pace (a new purchase takes a slot, a retry finds its own): a saga
  // whose turn is later starts then, and the buyer is told at once how long the checkout will take.
  const pace = (deps.checkoutsPerSecond ?? DEFAULT_CHECKOUTS_PER_SECOND) * PACE_AHEAD;
  const slot = record.status === 'holding' ? await takeCheckoutSlot(deps.db, record.purchaseId, pace) : undefined;
  const startDelayMs = slot ? Math.max(0, slot.getTime() - deps.clock.now()) : 0;
  const later = startDelayMs > START_NOW_WITHIN_MS;
  if ((respondAsync || later) && !isFinal(record.status)) {
    if (later) permit?.delay(startDelayMs);
    try {
      await beginPurchase(sagas, input, later ? startDelayMs : 0);
    } catch (err) {
      // The permit is not given back: a start that timed out may have started the saga after all.
      // It stays bound to the purchase until a view sees its hold step answered, or its shorter TTL ends.
      permit?.doubt();
      const now = await getPurchase(deps.db, record.purchaseId);
      if (!now || !isFinal(now.status)) {
        order.log.error({ err }, `purchase ${record.purchaseId}: could not start its workflow`);
        throw unavailable('the purchase service is busy; retry with the same Idempotency-Key');
      }
    }
    // The permit stays bound to this purchase until a view of the gate sees its hold step answered
    // (its hold row, or its refusal): no second call to the saga, whose server is the crowd's bottleneck.
    const queue = later ? await checkoutQueueView(deps, record) : undefined;
    if (queue) return waitingForCheckout(record.purchaseId, record, queue);
    return {
      status: 202,
      location: `/v1/purchases/${record.purchaseId}`,
      body: {
        purchaseId: record.purchaseId,
        status: record.status,
        ...(record.holdExpiresAt ? { holdExpiresAt: record.holdExpiresAt } : {}),
      },
    };
  }

  let state: PurchaseState = record;
  if (!isFinal(record.status)) {
    const until = Date.now() + deps.purchaseTimeoutMs;
    try {
      const closing = deps.lifecycle.closing;
      state = await deadline(deps.purchaseTimeoutMs, 'taking the hold', startOnce(sagas, input), closing);
      // The hold step answered: the next view counts its hold (or its refusal), the permit is done.
      permit?.settle();
    } catch (err) {
      // A deadline passed: the saga may still be taking its hold, so its permit stays bound (see above).
      // Any other failure is a start that may not have happened: the permit is kept a shorter while.
      // A closed saga (REJECT_DUPLICATE) has its outcome in the record.
      if (!(err instanceof Problem)) permit?.doubt();
      const now = await getPurchase(deps.db, record.purchaseId);
      // The hold is taken and the session waits for its turn in the Stripe budget: accepted. (A hold
      // that was never taken, with no worker to take it, is still a 503: the buyer has no unit yet.)
      const queue = err instanceof Problem && now ? await checkoutQueueView(deps, now) : undefined;
      if (queue?.holdExpiresAt) return waitingForCheckout(record.purchaseId, now!, queue);
      if (now && isFinal(now.status)) state = now;
      else if (err instanceof Problem) throw err;
      else {
        order.log.error({ err }, `purchase ${record.purchaseId}: could not reach its workflow`);
        throw unavailable('the purchase service is busy; retry with the same Idempotency-Key');
      }
    }
    // The hold is taken: the session opens on the Stripe queue when the budget gives it a turn, and
    // its step writes the checkout URL to the record, where this waits (not for the saga's next task).
    if (state.status === 'holding') {
      const answered = await deps.checkouts.untilAnswered(
        record.purchaseId,
        until - Date.now(),
        deps.lifecycle.closing,
      );
      if (!answered) {
        const queue = await checkoutQueueView(deps, state);
        return waitingForCheckout(
          record.purchaseId,
          state,
          queue ?? { ahead: 0, estimatedWaitSeconds: 1, nextPollSeconds: 1 },
        );
      }
      state = answered;
    }
    if (created) countRefusal(deps, state);
  }
  // Refused for want of a unit: whether one may come back, and when, is read now.
  const refusal = state.status === 'rejected' ? (state.rejection ?? 'sold_out') : undefined;
  const wanting = refusal === 'sold_out' || refusal === 'unit_unavailable';
  const outlook = wanting ? await deps.admissions.outlook(req) : null;
  return sagaAnswer(state, created, deps.clock.now(), outlook);
}

/**
 * The saga's start (update-with-start) in flight in this process for each purchase. Retries of one
 * key at once share it: Temporal takes at most 10 updates in flight per workflow and refuses the rest
 * (RESOURCE_EXHAUSTED), so one each would answer a burst of retries 503; with one per process, any
 * number of retries of a key wait on at most as many updates as there are API processes.
 */
const startsInFlight = new Map<string, Promise<PurchaseState>>();

function startOnce(sagas: SagaClient, input: PurchaseInput): Promise<PurchaseState> {
  let start = startsInFlight.get(input.purchaseId);
  if (!start) {
    start = startPurchase(sagas, input).finally(() => startsInFlight.delete(input.purchaseId));
    startsInFlight.set(input.purchaseId, start);
  }
  return start;
}

/**
 * A purchase as its buyer (or support) sees it; anyone else is told it does not exist (404). One its
 * hold step refused reads `failed` with the reason (sold out): a buyer answered 202 follows its
 * Location to that outcome.
 */
export async function visiblePurchase(
  deps: Pick<ApiDeps, 'db'>,
  id: string,
  reader: { support: boolean; buyerId?: string },
): Promise<PurchaseRecord> {
  const record = await getPurchase(deps.db, id);
  if (!record || (!reader.support && record.buyerId !== reader.buyerId))
    throw new Problem(404, 'purchase-not-found', `no purchase ${id}`);
  return record;
}
