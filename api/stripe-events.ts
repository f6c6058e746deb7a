import { createHash } from 'node:crypto';
import type Stripe from 'stripe';
import {
  bringsMoney,
  bringsNoPayment,
  HOLDING_STATUSES,
  isFinal,
  isPaid,
  isPaymentEventType,
  type PaymentEvent,
  type PurchaseState,
} from '../vocabulary';
import type { Shipping } from '../store/confirmation';
import { variable } from '../config/variables';

// Verified Stripe events, reduced to what the sagas need and to whom they claim to belong.

type Id = string | { id: string } | null | undefined;
const idOf = (v: Id): string | undefined => (typeof v === 'string' ? v : (v?.id ?? undefined));

/**
 * The sha256 (hex) of what an event says: its type, time, mode and data. Not of the bytes: Stripe
 * renders a retry's envelope anew (`pending_webhooks` counts the endpoints still waiting), and a
 * redelivery of the same event must stay a duplicate.
 */
export function contentDigest(event: Stripe.Event): string {
  return createHash('sha256')
    .update(JSON.stringify([event.type, event.created, event.livemode ?? null, event.data]))
    .digest('hex');
}

/** The object each event type we act on carries, and the fields of it Stripe always fills in. */
function expectedObject(type: string): { object: string; fields: string[] } | null {
  if (type.startsWith('checkout.session.')) return { object: 'checkout.session', fields: ['amount_total', 'currency'] };
  if (type.startsWith('payment_intent.')) return { object: 'payment_intent', fields: ['amount', 'currency'] };
  if (type.startsWith('refund.')) return { object: 'refund', fields: ['amount', 'currency'] };
  if (type.startsWith('charge.dispute.')) return { object: 'dispute', fields: [] };
  if (type.startsWith('charge.')) return { object: 'charge', fields: [] };
  return null;
}

/**
 * What an event we act on lacks of what Stripe always sends (`livemode`, the object its type names,
 * that object's amount and currency), or null. Missing is a mismatch, never a pass: an event without
 * `object` read as a PaymentIntent's and skipped the session check; one without an amount or
 * livemode skipped those checks.
 */
export function missingFields(event: Stripe.Event): string | null {
  const expected = expectedObject(event.type);
  if (!expected) return null;
  if (typeof event.livemode !== 'boolean') return 'the event has no `livemode`';
  const obj = event.data.object as unknown as Record<string, unknown>;
  if (obj.object !== expected.object) {
    const was = obj.object === undefined || obj.object === null ? 'missing' : JSON.stringify(obj.object);
    return `\`data.object.object\` is ${was}, not ${expected.object} as ${event.type} carries`;
  }
  const absent = expected.fields.filter((field) => obj[field] === undefined || obj[field] === null);
  return absent.length > 0 ? `the ${expected.object} has no ${absent.map((f) => `\`${f}\``).join(' or ')}` : null;
}

/** A payment event (checkout.session.*, payment_intent.payment_failed) and the purchase it names. */
export function toPaymentEvent(event: Stripe.Event): { purchaseId?: string; payment: PaymentEvent } | null {
  if (!isPaymentEventType(event.type)) return null;
  const obj = event.data.object as unknown as {
    id: string;
    object: string;
    metadata?: Record<string, string> | null;
    payment_intent?: Id;
    payment_status?: string;
    amount_total?: number | null;
    amount?: number | null;
    currency?: string | null;
  };
  // Only metadata.purchase_id names a purchase: a payer can set client_reference_id (a Payment Link
  // does), so a session elsewhere on the account that only carries it is recorded and left alone.
  const purchaseId = obj.metadata?.purchase_id ?? undefined;
  const isSession = obj.object === 'checkout.session';
  const amount = isSession ? obj.amount_total : obj.amount;
  return {
    purchaseId,
    payment: {
      eventId: event.id,
      type: event.type,
      sessionId: isSession ? obj.id : undefined,
      paymentIntentId: isSession ? idOf(obj.payment_intent) : obj.id,
      paymentStatus: obj.payment_status,
      ...(typeof amount === 'number' ? { amountCents: amount } : {}),
      ...(obj.currency ? { currency: obj.currency } : {}),
      livemode: event.livemode,
      createdAt: new Date(event.created * 1000).toISOString(),
    },
  };
}

/**
 * Where a Checkout Session's event says the purchase ships: the name and address Checkout collected
 * (`collected_information.shipping_details`); null for any other event, or a session that collected none.
 */
export function shippingOf(event: Stripe.Event): Shipping | null {
  const obj = event.data.object as {
    object?: string;
    collected_information?: Stripe.Checkout.Session.CollectedInformation | null;
  };
  const details = obj.object === 'checkout.session' ? obj.collected_information?.shipping_details : undefined;
  if (!details?.address) return null;
  return { ...(details.name ? { name: details.name } : {}), address: details.address };
}

/** News of a refund: ours (its metadata names the purchase and the path) or one made in the Dashboard. */
export interface RefundNewsEvent {
  kind: 'refund';
  refundId: string;
  status: string;
  failureReason?: string;
  paymentIntentId?: string;
  amountCents: number;
  purchaseId?: string;
  step?: 'late' | 'support' | 'stray';
  sessionId?: string;
}

/** A charge refunded in full or in part (how a Dashboard refund shows). */
export interface ChargeRefundedEvent {
  kind: 'charge_refunded';
  paymentIntentId?: string;
  fully: boolean;
}

export interface DisputeNewsEvent {
  kind: 'dispute';
  disputeId: string;
  status: string;
  reason: string;
  /** The response deadline (`evidence_details.due_by`), ISO time. */
  dueBy?: string;
  paymentIntentId?: string;
}

export type MoneyNews = RefundNewsEvent | ChargeRefundedEvent | DisputeNewsEvent;

/** 9999-12-31T23:59:59Z in Unix seconds: a later date has no four-digit year. */
const LAST_SECOND_OF_9999 = 253_402_300_799;

/** refund.*, charge.refunded and charge.dispute.* events, reduced; null for any other type. */
export function toMoneyNews(event: Stripe.Event): MoneyNews | null {
  const obj = event.data.object as unknown as {
    id: string;
    metadata?: Record<string, string> | null;
    status?: string | null;
    failure_reason?: string | null;
    reason?: string | null;
    payment_intent?: Id;
    amount?: number | null;
    refunded?: boolean;
    evidence_details?: { due_by?: number | null } | null;
  };
  if (event.type.startsWith('refund.')) {
    const step = obj.metadata?.refund_step;
    return {
      kind: 'refund',
      refundId: obj.id,
      status: obj.status ?? 'pending',
      ...(obj.failure_reason ? { failureReason: obj.failure_reason } : {}),
      paymentIntentId: idOf(obj.payment_intent),
      amountCents: Number(obj.amount ?? 0),
      purchaseId: obj.metadata?.purchase_id,
      step: step === 'late' || step === 'support' || step === 'stray' ? step : undefined,
      sessionId: obj.metadata?.session_id,
    };
  }
  if (event.type === 'charge.refunded') {
    return { kind: 'charge_refunded', paymentIntentId: idOf(obj.payment_intent), fully: obj.refunded === true };
  }
  if (event.type.startsWith('charge.dispute.')) {
    // Whole Unix seconds up to the year 9999 (what Postgres and an ISO date both take); anything else
    // (a malformed event) is left out rather than thrown on, or refused by Postgres for ever.
    const dueBy = Number(obj.evidence_details?.due_by ?? NaN);
    const dated = Number.isInteger(dueBy) && dueBy >= 0 && dueBy <= LAST_SECOND_OF_9999;
    return {
      kind: 'dispute',
      disputeId: obj.id,
      status: obj.status ?? '',
      reason: obj.reason ?? '',
      ...(dated ? { dueBy: new Date(dueBy * 1000).toISOString() } : {}),
      paymentIntentId: idOf(obj.payment_intent),
    };
  }
  return null;
}

/**
 * How long after the hold's lapse an expired session is taken for the saga's own expire: that call is
 * first in the Stripe queue and answers in seconds. An expiry heard later reaches the saga. The
 * default of EXPIRE_ANSWER_GRACE_MS (config/variables/tuning.ts), which the API reads.
 */
export const EXPIRE_ANSWER_GRACE_MS = Number(variable('EXPIRE_ANSWER_GRACE_MS').default);

/**
 * Why a purchase's own verified payment event need not reach its saga (the webhook records it and
 * stops), or null when it must. Each case saves a signal and a workflow task, or a follow-up run:
 * - a closed purchase cannot be changed by an event that brings no money (a decline, a failed
 *   delayed payment), nor a paid one by a late first word of its delayed payment;
 * - a purchase whose payment is settled (confirmed, late_confirmed, refunded) already counted the
 *   money of its session, which pays once: the saga that learned it from Stripe's answer to the expire
 *   hears the same payment again from the webhook;
 * - the hold lapsed moments ago and the saga is closing the session itself: the session's expiry is
 *   the one it asked for (or Stripe's own at the same time), and its own expire call says how the
 *   session ended. Past `graceMs` (EXPIRE_ANSWER_GRACE_MS) the saga hears it: its call has not answered (Stripe
 *   failing it with 5xx), and the session expired by hand or at its own time is what ends that call.
 */
export function whyTheSagaNeedNotHear(
  e: Pick<PaymentEvent, 'type' | 'paymentStatus' | 'sessionId'>,
  purchase: Pick<PurchaseState, 'status' | 'sessionId' | 'holdExpiresAt' | 'refund'>,
  now: number,
  graceMs = EXPIRE_ANSWER_GRACE_MS,
): string | null {
  const money = bringsMoney(e);
  const { status } = purchase;
  if (!money && isFinal(status) && (bringsNoPayment(e.type) || isPaid(status)))
    return 'the purchase is closed and the event brings no money';
  // Settled: a sale, or a refund of this payment on the record (one that failed and waits for support
  // in needs_attention too: the payment resent must not become a sale of a unit given back).
  const settled = isPaid(status) || purchase.refund !== undefined;
  if (money && settled && e.sessionId !== undefined && e.sessionId === purchase.sessionId)
    return "the session's payment is already settled";
  const holding = (HOLDING_STATUSES as readonly string[]).includes(status);
  const lapsedAt = purchase.holdExpiresAt === undefined ? undefined : Date.parse(purchase.holdExpiresAt);
  const closing = lapsedAt !== undefined && lapsedAt <= now && now - lapsedAt < graceMs;
  if (e.type === 'checkout.session.expired' && holding && closing)
    return 'the hold has lapsed: the saga closes the session itself';
  return null;
}
