import { Problem, invalidRequest, resourceMissing } from './errors';
import { newId } from './ids';
import { formatMoney } from './money';
import type { Charge, Metadata, PaymentIntent, Refund, RefundFailureReason, RefundReason } from './objects';
import { type Account, NO_REQUEST, type RequestRef } from './state';

export interface RefundInput {
  paymentIntent: string | null;
  charge: string | null;
  amount: number | null;
  reason: RefundReason | null;
  metadata: Metadata;
}

export const REFUND_FAILURE_REASONS: readonly RefundFailureReason[] = [
  'charge_for_pending_refund_disputed',
  'declined',
  'expired_or_canceled_card',
  'insufficient_funds',
  'lost_or_stolen_card',
  'merchant_request',
  'unknown',
];

/**
 * Refunds and their lifecycle. A refund starts `succeeded` (events `refund.created`, `charge.refunded`)
 * or, with the account's `refundStatus` set to `pending`, `pending` (`refund.created`) until it settles
 * (`refund.updated`, `charge.refunded`). Either may later fail (`refund.updated`, `refund.failed`),
 * which gives the amount back to the charge. What it reserves counts against the charge from creation.
 */
export class Refunds {
  constructor(private readonly account: Account) {}

  create(input: RefundInput, request: RequestRef): Refund {
    const charge = input.charge
      ? this.account.getCharge(input.charge, 'charge')
      : this.chargeToRefund(this.account.getPaymentIntent(input.paymentIntent as string, 'payment_intent'));
    if (input.paymentIntent && charge.payment_intent !== input.paymentIntent) {
      throw invalidRequest(`Charge ${charge.id} does not belong to PaymentIntent ${input.paymentIntent}.`, {
        param: 'charge',
      });
    }
    if (charge.status !== 'succeeded') {
      throw invalidRequest(`Charge ${charge.id} has not succeeded and cannot be refunded.`, {
        code: 'charge_not_refundable',
      });
    }
    const dispute = [...this.account.disputes.values()].find((d) => d.charge === charge.id);
    if (dispute && dispute.status !== 'won') {
      throw invalidRequest(`Charge ${charge.id} has been charged back; cannot issue a refund.`, {
        code: 'charge_disputed',
      });
    }
    const remaining = charge.amount - charge.amount_refunded;
    if (remaining <= 0) {
      throw invalidRequest(`Charge ${charge.id} has already been refunded.`, { code: 'charge_already_refunded' });
    }
    const amount = input.amount ?? remaining;
    if (amount > remaining) {
      throw invalidRequest(
        `Refund amount (${formatMoney(amount, charge.currency)}) is greater than unrefunded amount on charge (${formatMoney(remaining, charge.currency)})`,
        { code: 'amount_too_large', param: 'amount' },
      );
    }
    const status = this.account.settings.refundStatus;
    const refund: Refund = {
      id: newId.refund(),
      object: 'refund',
      amount,
      balance_transaction: null,
      charge: charge.id,
      created: this.account.nowSeconds(),
      currency: charge.currency,
      customer: null,
      customer_account: null,
      destination_details:
        charge.payment_method_details.type === 'card'
          ? {
              card: { reference_status: 'pending', reference_type: 'acquirer_reference_number', type: 'refund' },
              type: 'card',
            }
          : { type: charge.payment_method_details.type },
      metadata: input.metadata,
      payment_intent: charge.payment_intent,
      payment_method: charge.payment_method,
      ...(status === 'pending' ? { pending_reason: 'processing' as const } : {}),
      reason: input.reason,
      receipt_number: null,
      source_transfer_reversal: null,
      status,
      transfer_reversal: null,
    };
    this.account.refunds.set(refund.id, refund);
    charge.amount_refunded += amount;
    charge.refunded = charge.amount_refunded >= charge.amount;
    this.account.emit('refund.created', refund, request);
    if (status === 'succeeded') this.account.emit('charge.refunded', charge, request);
    return refund;
  }

  /**
   * A refund made outside this service, as from the Dashboard: no metadata, no idempotency key, the
   * same rules and events as the API.
   */
  fromDashboard(intentId: string, options: { amount?: number; reason?: RefundReason }): Refund {
    return this.create(
      {
        paymentIntent: intentId,
        charge: null,
        amount: options.amount ?? null,
        reason: options.reason ?? null,
        metadata: {},
      },
      { id: newId.request(), idempotencyKey: null },
    );
  }

  get(id: string): Refund {
    const refund = this.account.refunds.get(id);
    if (!refund) throw resourceMissing('refund', id);
    return refund;
  }

  list(filter: { paymentIntent?: string; charge?: string }): Refund[] {
    return [...this.account.refunds.values()]
      .filter((r) => filter.paymentIntent === undefined || r.payment_intent === filter.paymentIntent)
      .filter((r) => filter.charge === undefined || r.charge === filter.charge)
      .reverse();
  }

  /** A pending refund goes through: `refund.updated` (status succeeded), then `charge.refunded`. */
  settle(id: string): Refund {
    const refund = this.requireForAction(id);
    if (refund.status !== 'pending') {
      throw new Problem(400, 'refund_not_pending', `Refund ${id} is ${refund.status}; only a pending refund settles.`);
    }
    const charge = this.account.getCharge(refund.charge as string);
    refund.status = 'succeeded';
    delete refund.pending_reason;
    this.account.emit('refund.updated', refund, NO_REQUEST, {
      status: 'pending',
      pending_reason: 'processing',
    });
    this.account.emit('charge.refunded', charge, NO_REQUEST);
    return refund;
  }

  /**
   * A pending or succeeded refund fails (as with Stripe's refund-fails-asynchronously test card): the
   * amount goes back to the charge, then `refund.updated` (status failed) and `refund.failed`.
   */
  fail(id: string, failureReason: RefundFailureReason = 'expired_or_canceled_card'): Refund {
    const refund = this.requireForAction(id);
    if (refund.status !== 'pending' && refund.status !== 'succeeded') {
      throw new Problem(
        400,
        'refund_not_failable',
        `Refund ${id} is ${refund.status}; only a pending or succeeded refund can fail.`,
      );
    }
    const charge = this.account.getCharge(refund.charge as string);
    const previous: Record<string, unknown> = { status: refund.status, failure_reason: null };
    if (refund.pending_reason) previous.pending_reason = refund.pending_reason;
    refund.status = 'failed';
    refund.failure_reason = failureReason;
    delete refund.pending_reason;
    if ('card' in refund.destination_details) refund.destination_details.card.reference_status = 'unavailable';
    charge.amount_refunded = Math.max(0, charge.amount_refunded - refund.amount);
    charge.refunded = charge.amount_refunded >= charge.amount;
    this.account.emit('refund.updated', refund, NO_REQUEST, previous);
    this.account.emit('refund.failed', refund, NO_REQUEST);
    return refund;
  }

  private requireForAction(id: string): Refund {
    const refund = this.account.refunds.get(id);
    if (!refund) throw new Problem(404, 'refund_not_found', `No such refund: '${id}'.`);
    return refund;
  }

  private chargeToRefund(intent: PaymentIntent): Charge {
    const charge = this.account.latestChargeOf(intent);
    if (intent.status !== 'succeeded' || !charge) {
      throw invalidRequest(`This PaymentIntent (${intent.id}) does not have a successful charge to refund.`, {
        code: 'payment_intent_unexpected_state',
        param: 'payment_intent',
      });
    }
    return charge;
  }
}
