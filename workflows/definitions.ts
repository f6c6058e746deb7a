import { defineSearchAttributeKey, SearchAttributeType } from '@temporalio/common';
import { defineQuery, defineSignal, defineUpdate } from '@temporalio/workflow';
import type { PaymentEvent, PurchaseState, RefundEvent, SupportAction } from '../vocabulary';

// The messages and search attributes of the purchase saga: what the API, the CLIs and the Temporal
// UI use to talk to it and find it. Names are stable; recorded histories replay against them.

export const paymentEventSignal = defineSignal<[PaymentEvent]>('paymentEvent');
/** A refund's news from Stripe's webhook, for the saga that made the refund and waits for it to settle. */
export const refundEventSignal = defineSignal<[RefundEvent]>('refundEvent');
/** Support's word to a saga waiting on a step Stripe keeps refusing: try again now, or it was settled by hand. */
export const supportActionSignal = defineSignal<[SupportAction]>('supportAction');
export const purchaseStateQuery = defineQuery<PurchaseState>('purchaseState');
/**
 * Returns once the hold step answered: the hold is taken (the state carries its end; the session
 * opens on the Stripe queue next, and the purchase record says when), or the purchase was refused or failed.
 */
export const holdAnsweredUpdate = defineUpdate<PurchaseState>('holdAnswered');
/** The buyer gives up: returns once the saga has released the hold (or found a payment it must settle). */
export const cancelUpdate = defineUpdate<PurchaseState>('cancel');

export const PurchaseStatusKey = defineSearchAttributeKey('PurchaseStatus', SearchAttributeType.KEYWORD);
export const SkuKey = defineSearchAttributeKey('Sku', SearchAttributeType.KEYWORD);
export const BuyerIdKey = defineSearchAttributeKey('BuyerId', SearchAttributeType.KEYWORD);
export const HoldExpiresAtKey = defineSearchAttributeKey('HoldExpiresAt', SearchAttributeType.DATETIME);
