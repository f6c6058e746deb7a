import { Router } from '@koa/router';
import type Koa from 'koa';
import type Stripe from 'stripe';
import { deliverPaymentEvent } from '../../client/purchases';
import { getPurchase } from '../../store/purchases';
import { markEventDelivered, recordIgnoredEvent, recordReceivedEvent } from '../../store/webhook-events';
import { bringsNoPayment, isFinal, isPaymentEventType, type PaymentEvent } from '../../vocabulary';
import type { ApiDeps } from '../deps';
import { Problem } from '../problem';

const MAX_BODY = 512 * 1024;

async function rawBody(ctx: Koa.Context): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of ctx.req) {
    size += (chunk as Buffer).length;
    if (size > MAX_BODY) throw new Problem(400, 'bad-signature', 'body too large for a Stripe event');
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks);
}

/** Reduces a verified Stripe event to what the saga needs, and finds whose it is. */
function toPaymentEvent(event: Stripe.Event): { purchaseId?: string; payment: PaymentEvent } | null {
  if (!isPaymentEventType(event.type)) return null;
  const obj = event.data.object as unknown as {
    id: string;
    object: string;
    metadata?: Record<string, string> | null;
    client_reference_id?: string | null;
    payment_intent?: string | { id: string } | null;
    payment_status?: string;
  };
  const purchaseId = obj.metadata?.purchase_id ?? obj.client_reference_id ?? undefined;
  const isSession = obj.object === 'checkout.session';
  const pi = isSession ? obj.payment_intent : obj.id;
  return {
    purchaseId,
    payment: {
      eventId: event.id,
      type: event.type,
      sessionId: isSession ? obj.id : undefined,
      paymentIntentId: typeof pi === 'string' ? pi : (pi?.id ?? undefined),
      paymentStatus: obj.payment_status,
    },
  };
}

/**
 * POST /v1/webhooks/stripe. Verifies the signature over the raw body (no unverified mode), dedupes
 * on event id, and hands the event to its purchase workflow with signal-with-start: a running
 * saga gets the signal; a closed one is followed up by a new run that settles the payment. 200
 * only once Temporal has it; 5xx otherwise, so Stripe redelivers.
 */
export function webhookRoutes(deps: ApiDeps): Router {
  const router = new Router();

  router.post('/v1/webhooks/stripe', async (ctx) => {
    const body = await rawBody(ctx);
    const signature = ctx.get('stripe-signature');
    let event: Stripe.Event;
    try {
      if (!signature) throw new Error('no Stripe-Signature header');
      event = deps.stripe.webhooks.constructEvent(body, signature, deps.webhookSecret, 300);
    } catch (err) {
      deps.metrics.webhookEvents.inc({ result: 'bad_signature' });
      throw new Problem(400, 'bad-signature', (err as Error).message);
    }

    const mapped = toPaymentEvent(event);
    const purchase = mapped?.purchaseId ? await getPurchase(deps.db, mapped.purchaseId) : null;
    if (!mapped || !purchase) {
      await recordIgnoredEvent(deps.db, event.id, event.type, mapped?.purchaseId ?? null);
      deps.metrics.webhookEvents.inc({ result: 'ignored' });
      ctx.body = { received: true };
      return;
    }
    if ((await recordReceivedEvent(deps.db, event.id, event.type, purchase.purchaseId)) === 'delivered') {
      deps.metrics.webhookEvents.inc({ result: 'duplicate' });
      ctx.body = { received: true, duplicate: true };
      return;
    }
    // A closed-out purchase cannot be changed by an event that brings no money (an expiry the saga
    // asked for, a decline, a failed delayed payment): no follow-up run for those.
    if (bringsNoPayment(mapped.payment.type) && isFinal(purchase.status)) {
      await recordIgnoredEvent(deps.db, event.id, event.type, purchase.purchaseId);
      deps.metrics.webhookEvents.inc({ result: 'ignored' });
      ctx.body = { received: true };
      return;
    }

    try {
      await deliverPaymentEvent({ temporal: deps.temporal, taskQueue: deps.taskQueue }, purchase, mapped.payment);
    } catch (err) {
      deps.metrics.webhookEvents.inc({ result: 'error' });
      deps.log(`webhook ${event.id}: could not hand it to purchase ${purchase.purchaseId}`, err);
      throw new Problem(
        503,
        'unavailable',
        'could not hand the event over; Stripe will retry',
        {},
        { 'Retry-After': '5' },
      );
    }
    await markEventDelivered(deps.db, event.id);
    deps.metrics.paymentEvents.inc({ type: mapped.payment.type });
    deps.metrics.webhookEvents.inc({ result: 'delivered' });
    ctx.body = { received: true };
  });

  return router;
}
