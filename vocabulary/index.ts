// The project's one vocabulary: purchase statuses, refusals, the purchase request and the Stripe
// events the saga understands (events.ts). Every layer imports it; it imports nothing outside
// vocabulary/, so workflow code, the store and the API can all share it without pulling I/O into
// the workflow sandbox.

export * from './events';

/** Where a purchase is. Stable: the API, the PurchaseStatus search attribute and operators' filters use these names. */
export const PURCHASE_STATUSES = [
  'holding',
  'awaiting_payment',
  'confirmed',
  'late_confirmed',
  'expired',
  'payment_failed',
  'refunded',
  'failed',
  /**
   * Money arrived (or a refund was asked for) and Stripe refused a step that settles it: the saga
   * keeps retrying, `sagas stuck` lists it, and support can retry or settle it by hand.
   */
  'needs_attention',
  /** Never held: sold out, limit, existing hold. Not a purchase to the buyer (the API answers 409/422). */
  'rejected',
] as const;
export type PurchaseStatus = (typeof PURCHASE_STATUSES)[number];

/** Where the saga settles a purchase once the wait is over (or an operator cancels it). */
const SETTLED_BY_THE_SAGA = ['confirmed', 'late_confirmed', 'expired', 'payment_failed', 'refunded', 'failed'] as const;
/** A payment after the saga gave the unit back: a unit re-taken, or the money refunded (or stuck on a refusal). */
const LATE_PAYMENT = ['confirmed', 'late_confirmed', 'refunded', 'needs_attention'] as const;
/** Support's refund, a Dashboard refund, or a refund that failed. */
const AFTER_THE_SALE = ['refunded', 'needs_attention'] as const;
/**
 * Every change of a purchase's status (the sagas', support's and the webhook's): from each status,
 * the statuses it may move to. docs/architecture.md shows it as a table with the reasons;
 * test/fast/vocabulary/transitions.test.ts holds the two together and checks the recorded histories against it.
 */
export const PURCHASE_TRANSITIONS = {
  holding: ['awaiting_payment', 'rejected', 'failed', 'expired'],
  awaiting_payment: [...SETTLED_BY_THE_SAGA, 'needs_attention'],
  needs_attention: [...SETTLED_BY_THE_SAGA, 'awaiting_payment'],
  expired: LATE_PAYMENT,
  payment_failed: LATE_PAYMENT,
  failed: LATE_PAYMENT,
  confirmed: AFTER_THE_SALE,
  late_confirmed: AFTER_THE_SALE,
  refunded: ['needs_attention'],
  rejected: [],
} as const satisfies Record<PurchaseStatus, readonly PurchaseStatus[]>;

/** Whether a purchase may go from one status to the other (staying where it is, with a new reason, always may). */
export function canMove(from: PurchaseStatus, to: PurchaseStatus): boolean {
  return from === to || (PURCHASE_TRANSITIONS[from] as readonly PurchaseStatus[]).includes(to);
}

/** No step of the saga will change a purchase in these statuses unless money arrives. */
export const FINAL_STATUSES = [
  'confirmed',
  'late_confirmed',
  'expired',
  'payment_failed',
  'refunded',
  'failed',
  'rejected',
] as const satisfies readonly PurchaseStatus[];

/** The payment has its outcome: a sale, or a refund. */
export const PAID_STATUSES = ['confirmed', 'late_confirmed', 'refunded'] as const satisfies readonly PurchaseStatus[];

/** A saga in these statuses still owns a hold that it must convert or release. */
export const HOLDING_STATUSES = ['holding', 'awaiting_payment'] as const satisfies readonly PurchaseStatus[];

/** Paid orders that support may refund. */
export const REFUNDABLE_STATUSES = ['confirmed', 'late_confirmed'] as const satisfies readonly PurchaseStatus[];

export function isFinal(status: PurchaseStatus): boolean {
  return (FINAL_STATUSES as readonly PurchaseStatus[]).includes(status);
}
export function isPaid(status: PurchaseStatus): boolean {
  return (PAID_STATUSES as readonly PurchaseStatus[]).includes(status);
}
export function isRefundable(status: PurchaseStatus): boolean {
  return (REFUNDABLE_STATUSES as readonly PurchaseStatus[]).includes(status);
}

/** Why a purchase never got a hold. */
export const REJECTIONS = [
  'sold_out',
  'hold_exists',
  'limit_exceeded',
  'unit_unavailable',
  'product_not_found',
] as const;
export type Rejection = (typeof REJECTIONS)[number];

/** What a buyer asks for: the body of POST /v1/purchases once validated. */
export interface PurchaseRequest {
  sku: string;
  buyerId: string;
  quantity: number;
  unitId?: string;
}

/** What a purchase sells at, fixed when the product is created and carried by the saga so no step reads the product again. */
export interface ProductTerms {
  name: string;
  priceCents: number;
  currency: string;
  holdSeconds: number;
  hasUnits: boolean;
  /** Units one payment card may buy of the product (Stripe's card fingerprint); absent: no limit. */
  maxPerCard?: number;
  /** Units one shipping address may buy (the address Checkout collected, normalised); absent: no limit. */
  maxPerAddress?: number;
  /** Where Checkout lets the buyer ship (ISO codes): the session collects the address. Absent: none collected. */
  shippingCountries?: string[];
  /** The terms of rules added through the rules module (store/rules/), by each rule's term name. */
  rules?: Record<string, unknown>;
}

/** One purchase: the request, the id it is keyed by, and (for a new saga) the terms it sells at. */
export interface PurchaseInput extends PurchaseRequest {
  purchaseId: string;
  terms?: ProductTerms;
  /**
   * Set when a payment event reaches a purchase whose workflow already closed: the new run does
   * no hold or checkout of its own, it settles the payment (re-take or refund) from the record.
   */
  followUp?: boolean;
  /**
   * The id of the HTTP request that started this run (X-Request-Id, or one the API made up): on
   * every log line of the saga and its activities. Unset when whoever started the run had none.
   */
  requestId?: string;
}

/**
 * Where a refund stands, as Stripe reports it (`pending` until it settles one way or the other), or
 * `settled`: support settled it by hand, outside Stripe (no Stripe refund says so).
 */
export type RefundStatus = 'pending' | 'succeeded' | 'failed' | 'canceled' | 'requires_action' | 'settled';

/**
 * A refund's status as the HTTP contract has it (`pending`, `succeeded` or `failed`): settled by hand
 * is the money back (`succeeded`, the view says `settledByHand`), Stripe's `canceled` is a refund that
 * will not be made (`failed`), and `requires_action` is not settled yet (`pending`).
 */
export function contractRefundStatus(status: string): 'pending' | 'succeeded' | 'failed' {
  if (status === 'succeeded' || status === 'settled') return 'succeeded';
  if (status === 'failed' || status === 'canceled') return 'failed';
  return 'pending';
}

export interface RefundSummary {
  status: string;
  reason: string;
  refundId?: string;
  /** Stripe's `failure_reason` once a refund failed. */
  failureReason?: string;
}

/** A dispute (chargeback) the buyer's bank opened on the payment: Stripe's status and reason. */
export interface DisputeSummary {
  disputeId: string;
  status: string;
  reason: string;
  /** When Stripe wants the merchant's evidence by (`evidence_details.due_by`, ISO time), while it is open. */
  dueBy?: string;
}

/** Stripe's dispute statuses while the bank has not decided: the charge cannot be refunded meanwhile. */
export const OPEN_DISPUTE_STATUSES = [
  'warning_needs_response',
  'needs_response',
  'warning_under_review',
  'under_review',
] as const;
/** Of those, the ones waiting for the merchant's evidence (by `dueBy`). */
export const DISPUTE_NEEDS_RESPONSE_STATUSES = ['warning_needs_response', 'needs_response'] as const;
/** Stripe's closed statuses: a later event of the same dispute cannot reopen it on the record. */
export const CLOSED_DISPUTE_STATUSES = ['won', 'lost', 'warning_closed'] as const;

export function isDisputeOpen(status: string): boolean {
  return (OPEN_DISPUTE_STATUSES as readonly string[]).includes(status);
}

/**
 * Who acts on a purchase's refund still owed when its dispute closes. Lost: it settles the refund,
 * since the bank already gave the money back (the chargeback) and the refund is not owed any more;
 * the record says so. Won: it asks the refund's saga to try again now, since Stripe takes it again.
 */
export const DISPUTE_ACTOR = 'stripe-dispute';

/** What the record says of a refund settled by hand: who settled it, and their note (a lost dispute's says itself). */
export function settledByHand(by: { actor: string; note: string }): string {
  return by.actor === DISPUTE_ACTOR ? by.note : `settled by hand by ${by.actor}: ${by.note}`;
}

/** The saga's view of a purchase: what the `purchaseState` query returns and the record stores. */
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
  /** For a `hold_exists` refusal: the purchase that holds the SKU for this buyer. */
  heldBy?: string;
  refund?: RefundSummary;
  dispute?: DisputeSummary;
  oversold?: boolean;
}

export interface SupportRefundInput {
  purchaseId: string;
  /** The buyer's message, sent word for word (and the refund's reason on the record). */
  reason: string;
  restock: boolean;
  actor: string;
  /** Support's internal note: in the audit trail only, never sent to the buyer or to Stripe. */
  note?: string;
}

/** What the audit trail keeps of a support refund request: the request the saga started with, or one that joined it. */
export function supportRequestDetail(input: SupportRefundInput): Record<string, unknown> {
  return { reason: input.reason, restock: input.restock, ...(input.note ? { note: input.note } : {}) };
}

/** A refund that failed after its saga ended, made again (or settled by hand) on support's word. */
export interface RefundAgainInput {
  purchaseId: string;
  /** Who asked first (support's later words name themselves). */
  actor: string;
}

export interface SupportRefundResult {
  purchaseId: string;
  outcome: 'refunded' | 'not_refundable';
  refund?: RefundSummary;
  restocked?: boolean;
  detail?: string;
}

/** The channels a buyer notification goes by (the worker's, worker/notification-channels.ts). */
export const NOTIFICATION_CHANNELS = ['webhook', 'email', 'log'] as const;
export type NotificationChannel = (typeof NOTIFICATION_CHANNELS)[number];

/** Workflow ids are business ids: starting the same purchase twice finds the first. */
export function purchaseWorkflowId(purchaseId: string): string {
  return `purchase-${purchaseId}`;
}
export function refundWorkflowId(purchaseId: string): string {
  return `refund-${purchaseId}`;
}
/** Money that arrived on a Checkout Session naming one of our purchases but not opened by it. */
export function strayPaymentWorkflowId(sessionId: string): string {
  return `stray-${sessionId}`;
}

/** One delivery of a buyer notification (its id in `notifications`) on one channel: webhook, email, log. */
export interface NotificationInput {
  notificationId: string;
  channel: string;
}
/**
 * One workflow per delivery: a channel's outcome never touches another's, and a requeue starts it
 * again. Notification ids count per database, so the deployment's task queue is part of it.
 */
export function notificationWorkflowId(taskQueue: string, n: NotificationInput): string {
  return `notify-${taskQueue}-ntf_${n.notificationId}-${n.channel}`;
}

/** A paid Checkout Session that named one of our purchases but is not its own. */
export interface StrayPaymentInput {
  sessionId: string;
  claimedPurchase: string;
  paymentIntentId?: string;
  why: string;
}
export interface StrayPaymentResult {
  sessionId: string;
  /** `refused`: Stripe's session or our records say the money is not stray; nothing was refunded. */
  outcome: 'refunded' | 'settled_by_hand' | 'needs_attention' | 'refused';
}
/**
 * The type of the failure with which the stray refund step refuses to refund (activities/stray-guard.ts):
 * never retried, it ends the stray-payment saga with outcome `refused`.
 */
export const STRAY_REFUND_REFUSED = 'StrayRefundRefused';

/** What support can tell a saga that waits on a Stripe step Stripe keeps refusing. */
export type SupportAction =
  /** Try the step again now. */
  | { action: 'retry'; actor: string }
  /** The step was done by hand (say, a refund by bank transfer): stop trying and record it. */
  | { action: 'settled'; actor: string; note: string };

/** The Stripe endpoints the saga calls, as the worker counts them (`flashsale_stripe_requests_total{endpoint}`). */
export const STRIPE_ENDPOINTS = [
  'checkout.sessions.create',
  'checkout.sessions.expire',
  'checkout.sessions.retrieve',
  'payment_intents.retrieve',
  'refunds.create',
  'refunds.retrieve',
] as const;
export type StripeEndpoint = (typeof STRIPE_ENDPOINTS)[number];
/** How a call to Stripe went: answered, 429 (rate limited), another 4xx (refused), or 5xx / no answer. */
export const STRIPE_OUTCOMES = ['ok', 'rate_limited', 'refused', 'failed'] as const;
export type StripeOutcome = (typeof STRIPE_OUTCOMES)[number];

/**
 * The task queue every call to Stripe runs on, beside the saga's own: its workers set the
 * deployment's Stripe budget as the queue's rate limit, which the Temporal server enforces across them all.
 */
export function stripeTaskQueue(taskQueue: string): string {
  return `${taskQueue}-stripe`;
}

/**
 * The task queue of buyer notifications (their workflows and deliveries), apart from the saga's so a
 * slow merchant webhook or mail server never holds a saga's step back.
 */
export function notificationTaskQueue(taskQueue: string): string {
  return `${taskQueue}-notifications`;
}

/** How often the workers hand to Temporal the deliveries owed that no workflow has (requeued ones, mostly). */
export const NOTIFICATION_HAND_OVER_MS = 5_000;
