import { defineSearchAttributeKey, SearchAttributeType } from '@temporalio/common';
import { defineQuery, defineSignal, defineUpdate } from '@temporalio/workflow';

/** Where a purchase is. Stable: the API, search attributes and operators' filters use these names. */
export type PurchaseStatus =
  | 'holding'
  | 'awaiting_payment'
  | 'confirmed'
  | 'late_confirmed'
  | 'expired'
  | 'payment_failed'
  | 'refunded'
  | 'failed'
  /** Never held: sold out, limit, existing hold. Not a purchase to the buyer (the API answers 409/422). */
  | 'rejected';

export const FINAL_STATUSES: readonly PurchaseStatus[] = [
  'confirmed',
  'late_confirmed',
  'expired',
  'payment_failed',
  'refunded',
  'failed',
  'rejected',
];

/** Statuses in which the payment has its outcome: a sale, or a refund. */
export const PAID_STATUSES: readonly PurchaseStatus[] = ['confirmed', 'late_confirmed', 'refunded'];

export interface PurchaseInput {
  purchaseId: string;
  sku: string;
  buyerId: string;
  quantity: number;
  unitId?: string;
  /**
   * Set when a payment event reaches a purchase whose workflow already closed: the new run does
   * no hold or checkout of its own, it settles the payment (re-take or refund) from the record.
   */
  followUp?: boolean;
}

export type Rejection = 'sold_out' | 'hold_exists' | 'limit_exceeded' | 'unit_unavailable' | 'product_not_found';

export interface PurchaseState {
  purchaseId: string;
  sku: string;
  buyerId: string;
  quantity: number;
  status: PurchaseStatus;
  amountCents?: number;
  currency?: string;
  holdExpiresAt?: string;
  checkoutUrl?: string;
  sessionId?: string;
  paymentIntentId?: string;
  /** Why a purchase was refused, failed or ended the way it did. */
  reason?: string;
  rejection?: Rejection;
  refund?: { status: string; reason: string; refundId?: string };
  oversold?: boolean;
}

/** What Stripe told us, reduced to what the saga needs. `eventId` dedupes redeliveries. */
export interface PaymentEvent {
  eventId: string;
  type:
    | 'checkout.session.completed'
    | 'checkout.session.async_payment_succeeded'
    | 'checkout.session.async_payment_failed'
    | 'checkout.session.expired'
    | 'payment_intent.payment_failed';
  sessionId?: string;
  paymentIntentId?: string;
  /** For checkout.session.*: the session's payment_status (`paid`, `unpaid`, `no_payment_required`). */
  paymentStatus?: string;
}

export const paymentEventSignal = defineSignal<[PaymentEvent]>('paymentEvent');
export const cancelSignal = defineSignal<[]>('cancel');
export const purchaseStateQuery = defineQuery<PurchaseState>('purchaseState');
/** Returns once the hold is taken and the Checkout Session is open (or the purchase was refused or failed). */
export const checkoutReadyUpdate = defineUpdate<PurchaseState>('checkoutReady');

export interface SupportRefundInput {
  purchaseId: string;
  reason: string;
  restock: boolean;
  actor: string;
}
export interface SupportRefundResult {
  purchaseId: string;
  outcome: 'refunded' | 'not_refundable';
  refund?: { status: string; reason: string; refundId?: string };
  restocked?: boolean;
  detail?: string;
}

export const PurchaseStatusKey = defineSearchAttributeKey('PurchaseStatus', SearchAttributeType.KEYWORD);
export const SkuKey = defineSearchAttributeKey('Sku', SearchAttributeType.KEYWORD);
export const BuyerIdKey = defineSearchAttributeKey('BuyerId', SearchAttributeType.KEYWORD);
export const HoldExpiresAtKey = defineSearchAttributeKey('HoldExpiresAt', SearchAttributeType.DATETIME);

export function purchaseWorkflowId(purchaseId: string): string {
  return `purchase-${purchaseId}`;
}
export function refundWorkflowId(purchaseId: string): string {
  return `refund-${purchaseId}`;
}
