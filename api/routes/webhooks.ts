import { Router } from '@koa/router';
import type Koa from 'koa';
import type Stripe from 'stripe';
import { getPurchase } from '../../activities/purchases';
import {
  BuyerIdKey,
  FINAL_STATUSES,
  paymentEventSignal,
  purchaseWorkflowId,
  PurchaseStatusKey,
  SkuKey,
  type PaymentEvent,
} from '../../workflows/definitions';
import type { purchaseWorkflow } from '../../workflows/purchase';
import type { ApiDeps } from '../deps';
import { Problem } from '../problem';

const HANDLED = new Set<PaymentEvent['type']>([
  'checkout.session.completed',
  'checkout.session.async_payment_succeeded',
  'checkout.session.async_payment_failed',
  'checkout.session.expired',
  'payment_intent.payment_failed',
]);

const NO_PAYMENT = new Set<PaymentEvent['type']>([
  'checkout.session.expired',
  'payment_intent.payment_failed',
  'checkout.session.async_payment_failed',
]);

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
  if (!HANDLED.has(event.type as PaymentEvent['type'])) return null;
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
      type: event.type as PaymentEvent['type'],
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
      await deps.db.query(
        `INSERT INTO webhook_events (event_id, type, purchase_id, status) VALUES ($1, $2, $3, 'ignored') ON CONFLICT DO NOTHING`,
        [event.id, event.type, mapped?.purchaseId ?? null],
      );
      deps.metrics.webhookEvents.inc({ result: 'ignored' });
      ctx.body = { received: true };
      return;
    }

    const { rows } = await deps.db.query<{ status: string }>(
      `INSERT INTO webhook_events (event_id, type, purchase_id, status) VALUES ($1, $2, $3, 'received')
       ON CONFLICT (event_id) DO UPDATE SET event_id = EXCLUDED.event_id RETURNING status`,
      [event.id, event.type, purchase.purchaseId],
    );
    if (rows[0].status === 'delivered') {
      deps.metrics.webhookEvents.inc({ result: 'duplicate' });
      ctx.body = { received: true, duplicate: true };
      return;
    }

    // A closed-out purchase cannot be changed by an event that brings no money (an expiry the saga
    // asked for, a decline, a failed delayed payment): no follow-up run for those.
    const bringsNoPayment = NO_PAYMENT.has(mapped.payment.type);
    if (bringsNoPayment && FINAL_STATUSES.includes(purchase.status)) {
      await deps.db.query(`UPDATE webhook_events SET status = 'ignored' WHERE event_id = $1`, [event.id]);
      deps.metrics.webhookEvents.inc({ result: 'ignored' });
      ctx.body = { received: true };
      return;
    }

    try {
      await deps.temporal.workflow.signalWithStart<typeof purchaseWorkflow, [PaymentEvent]>('purchaseWorkflow', {
        workflowId: purchaseWorkflowId(purchase.purchaseId),
        taskQueue: deps.taskQueue,
        args: [
          {
            purchaseId: purchase.purchaseId,
            sku: purchase.sku,
            buyerId: purchase.buyerId,
            quantity: purchase.quantity,
            followUp: true,
          },
        ],
        signal: paymentEventSignal,
        signalArgs: [mapped.payment],
        workflowIdReusePolicy: 'ALLOW_DUPLICATE',
        // A follow-up run must be as findable in the Temporal UI as the first one.
        typedSearchAttributes: [
          { key: SkuKey, value: purchase.sku },
          { key: BuyerIdKey, value: purchase.buyerId },
          { key: PurchaseStatusKey, value: purchase.status },
        ],
      });
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
    await deps.db.query(`UPDATE webhook_events SET status = 'delivered', delivered_at = now() WHERE event_id = $1`, [
      event.id,
    ]);
    deps.metrics.webhookEvents.inc({ result: 'delivered' });
    ctx.body = { received: true };
  });

  return router;
}
