import { Router } from '@koa/router';
import type Stripe from 'stripe';
import { deliverPaymentEvent } from '../../client/purchases';
import { startStrayRefund } from '../../client/refunds';
import { recordShipping } from '../../store/confirmation';
import { extendHold } from '../../store/holds';
import { noteStrayPayment } from '../../store/payments';
import { appendAudit, getPurchase, type PurchaseRecord } from '../../store/purchases';
import {
  claimEventId,
  markEventDelivered,
  recordIgnoredEvent,
  recordReceivedEvent,
  recordRejectedEvent,
} from '../../store/webhook-events';
import { bringsMoney, foreignEventReason, paidBy, type PaymentEvent } from '../../vocabulary';
import type { Logger } from '../../config/log';
import { requestId, requestLog } from '../access-log';
import { readRawBody } from '../body';
import type { ApiDeps } from '../deps';
import { notAnEvent, scrubEvent } from '../event-guard';
import { recordMoneyNews } from '../money-news';
import { Problem } from '../problem';
import {
  contentDigest,
  missingFields,
  shippingOf,
  toMoneyNews,
  toPaymentEvent,
  whyTheSagaNeedNotHear,
} from '../stripe-events';

/** The largest body read (the signature covers its exact bytes): far above any Stripe event. */
const MAX_BODY = 512 * 1024;
/** How long a hold paid in time is kept for its saga to turn into the sale. */
const PAID_HOLD_KEPT_SECONDS = 15 * 60;

/** Runs a step of handling an event; a failure is a 503 (Stripe delivers the event again), logged and counted. */
async function orRetryLater<T>(deps: ApiDeps, log: Logger, what: string, step: () => Promise<T>): Promise<T> {
  try {
    return await step();
  } catch (err) {
    deps.metrics.webhookEvents.inc({ result: 'error' });
    log.error({ err }, `webhook: could not ${what}`);
    throw new Problem(
      503,
      'unavailable',
      'could not hand the event over; Stripe will retry',
      {},
      { 'Retry-After': '5' },
    );
  }
}

/**
 * An event that names a purchase but is not its own (another session, amount, currency or mode) or
 * lacks what Stripe always sends: recorded with why, never delivered. Money paid on a foreign
 * session is refunded by its own saga; an incomplete event (`complete` false) moves no money.
 */
async function rejectForeign(
  deps: ApiDeps,
  event: Stripe.Event,
  payment: PaymentEvent,
  purchase: PurchaseRecord,
  why: string,
  complete: boolean,
): Promise<void> {
  await recordRejectedEvent(deps.db, event.id, event.type, purchase.purchaseId, why);
  await appendAudit(deps.db, purchase.purchaseId, 'webhook', 'payment_event_rejected', {
    eventId: event.id,
    type: event.type,
    why,
  });
  const strayMoney =
    complete &&
    bringsMoney(payment) &&
    payment.sessionId !== undefined &&
    payment.sessionId !== purchase.sessionId &&
    payment.livemode === deps.livemode;
  if (!strayMoney) return;
  const stray = {
    sessionId: payment.sessionId!,
    claimedPurchase: purchase.purchaseId,
    paymentIntentId: payment.paymentIntentId,
    why,
  };
  await noteStrayPayment(deps.db, { ...stray, amountCents: payment.amountCents, currency: payment.currency });
  await startStrayRefund(deps, stray);
}

/** How far a signature's time may be from now, either way (Stripe's default is 300 s behind). */
const SIGNATURE_TOLERANCE_SECONDS = 300;

/**
 * POST /v1/webhooks/stripe. Verifies the signature over the raw body (no unverified mode) and the
 * event's shape (a signed body that is no event is 400 `bad-signature`, never a 500 Stripe would
 * retry for days; NUL and lone surrogates in it are scrubbed before anything is stored), holds an
 * event id to the content it was first received with (other content under it is refused, 200 with
 * `rejected`, counted in `webhook_events.other_bodies`), dedupes on event id, checks the event
 * carries what Stripe always sends and is its purchase's own, and hands it to its purchase workflow with
 * signal-with-start: a running saga gets the signal; a closed one is followed up by a new run that
 * settles the payment. Refund and dispute events go on the purchase's record (and to the saga
 * waiting for its refund). 200 only once Temporal and Postgres have it; 5xx otherwise, so Stripe
 * redelivers.
 */
export function webhookRoutes(deps: ApiDeps): Router {
  const router = new Router();

  router.post('/v1/webhooks/stripe', async (ctx) => {
    const body = await readRawBody(ctx.req, MAX_BODY);
    const signature = ctx.get('stripe-signature');
    let event: Stripe.Event;
    try {
      if (!signature) throw new Error('no Stripe-Signature header');
      event = deps.stripe.webhooks.constructEvent(body, signature, deps.webhookSecret, SIGNATURE_TOLERANCE_SECONDS);
      // stripe-node bounds a signature's age only: one dated ahead would stay good until its day. Every
      // `t=` of the header is looked at, whichever one stripe-node took.
      const signedAt = Math.max(...[...signature.matchAll(/(?:^|,)\s*t=(\d+)/g)].map((m) => Number(m[1])));
      if (signedAt > Date.now() / 1000 + SIGNATURE_TOLERANCE_SECONDS) {
        throw new Error(`the signature is dated more than ${SIGNATURE_TOLERANCE_SECONDS} s ahead`);
      }
      // Signed is not yet well-formed: the fields read below must have an event's shape.
      const why = notAnEvent(event);
      if (why) throw new Error(`the body is not a Stripe event: ${why}`);
      scrubEvent(event);
    } catch (err) {
      deps.metrics.webhookEvents.inc({ result: 'bad_signature' });
      throw new Problem(400, 'bad-signature', (err as Error).message);
    }

    const log = requestLog(ctx);
    const digest = contentDigest(event);
    if (
      !(await orRetryLater(deps, log, `record ${event.id}`, () => claimEventId(deps.db, event.id, event.type, digest)))
    ) {
      // Stripe never changes an event: other content under a known id is not that event.
      log.warn({ eventId: event.id, type: event.type }, 'webhook: an event id came again with other content; refused');
      deps.metrics.webhookEvents.inc({ result: 'conflict' });
      ctx.body = { received: true, rejected: `event ${event.id} was first received with other content` };
      return;
    }
    const missing = missingFields(event);

    const news = toMoneyNews(event);
    if (news) {
      if (missing) {
        await recordRejectedEvent(deps.db, event.id, event.type, null, missing);
        deps.metrics.webhookEvents.inc({ result: 'rejected' });
        ctx.body = { received: true, rejected: missing };
        return;
      }
      const result = await orRetryLater(deps, log, `record ${event.type} ${event.id}`, () =>
        recordMoneyNews(deps, news),
      );
      if (result === 'recorded') await markEventDelivered(deps.db, event.id);
      else await recordIgnoredEvent(deps.db, event.id, event.type, null);
      deps.metrics.webhookEvents.inc({ result });
      ctx.body = { received: true };
      return;
    }

    const mapped = toPaymentEvent(event);
    const purchase = mapped?.purchaseId ? await getPurchase(deps.db, mapped.purchaseId) : null;
    if (!mapped || !purchase) {
      await recordIgnoredEvent(deps.db, event.id, event.type, mapped?.purchaseId ?? null);
      deps.metrics.webhookEvents.inc({ result: 'ignored' });
      ctx.body = { received: true };
      return;
    }
    const foreign = missing ?? foreignEventReason(mapped.payment, purchase, deps.livemode);
    if (foreign) {
      await orRetryLater(deps, log, `settle the foreign event ${event.id} of ${purchase.purchaseId}`, () =>
        rejectForeign(deps, event, mapped.payment, purchase, foreign, missing === null),
      );
      deps.metrics.webhookEvents.inc({ result: 'rejected' });
      ctx.body = { received: true, rejected: foreign };
      return;
    }
    if ((await recordReceivedEvent(deps.db, event.id, event.type, purchase.purchaseId)) === 'delivered') {
      deps.metrics.webhookEvents.inc({ result: 'duplicate' });
      ctx.body = { received: true, duplicate: true };
      return;
    }
    const unheard = whyTheSagaNeedNotHear(mapped.payment, purchase, Date.now(), deps.expireAnswerGraceMs);
    if (unheard) {
      await recordIgnoredEvent(deps.db, event.id, event.type, purchase.purchaseId, unheard);
      deps.metrics.webhookEvents.inc({ result: 'ignored' });
      ctx.body = { received: true };
      return;
    }

    const shipping = shippingOf(event);
    if (shipping) {
      // Where it ships, kept from the purchase's own verified event: the saga's confirmation finds it
      // here and spends no call of the Stripe budget reading the session again (activities/confirmation.ts).
      await orRetryLater(deps, log, `keep where ${purchase.purchaseId} ships`, () =>
        recordShipping(deps.db, purchase.purchaseId, shipping),
      );
    }
    if (bringsMoney(mapped.payment)) {
      // Paid while the hold ran: the unit stays this buyer's until the saga (maybe behind) sells it.
      await extendHold(
        deps.db,
        purchase.purchaseId,
        PAID_HOLD_KEPT_SECONDS,
        new Date(paidBy(mapped.payment) ?? Date.now()),
      );
    }
    await orRetryLater(deps, log, `hand ${event.id} to purchase ${purchase.purchaseId}`, async () =>
      deliverPaymentEvent(
        { temporal: deps.temporal, taskQueue: deps.taskQueue },
        purchase,
        mapped.payment,
        requestId(ctx),
        // A follow-up run settles under the product's limits like the first run (one read per SKU per process).
        (await deps.admissions.rulesOf(purchase.sku))?.terms,
      ),
    );
    await markEventDelivered(deps.db, event.id);
    deps.metrics.paymentEvents.inc({ type: mapped.payment.type });
    if (bringsMoney(mapped.payment)) deps.metrics.paymentsReceived.inc();
    deps.metrics.webhookEvents.inc({ result: 'delivered' });
    ctx.body = { received: true };
  });

  return router;
}
