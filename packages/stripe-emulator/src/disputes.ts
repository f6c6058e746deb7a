import { Problem, invalidRequest, resourceMissing } from './errors';
import { newId } from './ids';
import type { Charge, Dispute, DisputeEvidence, DisputeReason } from './objects';
import { type Account, NO_REQUEST, type RequestRef } from './state';

export const DISPUTE_REASONS: readonly DisputeReason[] = [
  'bank_cannot_process',
  'credit_not_processed',
  'customer_initiated',
  'debit_not_authorized',
  'duplicate',
  'fraudulent',
  'general',
  'incorrect_account_details',
  'insufficient_funds',
  'product_not_received',
  'product_unacceptable',
  'subscription_canceled',
  'unrecognized',
];

export const DISPUTE_OUTCOMES = ['won', 'lost'] as const;
export type DisputeOutcome = (typeof DISPUTE_OUTCOMES)[number];

/** Visa's reason codes for the common categories, as Stripe reports them in `network_reason_code`. */
const VISA_REASON_CODES: Partial<Record<DisputeReason, string>> = {
  fraudulent: '10.4',
  product_not_received: '13.1',
  product_unacceptable: '13.3',
  duplicate: '12.6.1',
  credit_not_processed: '13.6',
  subscription_canceled: '13.2',
};

const EVIDENCE_WINDOW_SECONDS = 7 * 24 * 60 * 60;

/**
 * Disputes (chargebacks) on a succeeded card charge, one per charge as in Stripe. A new dispute
 * `needs_response` (events `charge.dispute.created`, `charge.dispute.funds_withdrawn`); closing it
 * `won` (`charge.dispute.closed`, `charge.dispute.funds_reinstated`) or `lost` (`charge.dispute.closed`).
 * While it is open or once lost, the charge cannot be refunded (`charge_disputed`).
 */
export class Disputes {
  constructor(private readonly account: Account) {}

  /**
   * `POST /_emulator/payment_intents/:id/dispute`: the buyer disputes the payment; on a payment already
   * disputed, the open dispute closes with `outcome` (default `lost`, as when no evidence is sent).
   * `outcome` on the first call opens and closes the dispute at once.
   */
  disputePayment(intentId: string, options: { reason?: DisputeReason; outcome?: DisputeOutcome }): Dispute {
    const intent = this.account.intents.get(intentId);
    if (!intent) throw new Problem(404, 'payment_intent_not_found', `No such PaymentIntent: '${intentId}'.`);
    const charge = this.account.latestChargeOf(intent);
    if (!charge || charge.status !== 'succeeded') {
      throw new Problem(
        400,
        'no_successful_charge',
        `PaymentIntent ${intentId} has no succeeded charge to dispute (it is ${intent.status}).`,
      );
    }
    const existing = this.ofCharge(charge.id);
    if (!existing) {
      const dispute = this.open(charge, options.reason ?? 'fraudulent');
      return options.outcome ? this.close(dispute.id, options.outcome) : dispute;
    }
    if (isClosed(existing)) {
      throw new Problem(
        400,
        'dispute_closed',
        `The dispute ${existing.id} on PaymentIntent ${intentId} is already closed (${existing.status}).`,
      );
    }
    return this.close(existing.id, options.outcome ?? 'lost');
  }

  /** Closes an open dispute: `won` gives the funds back, `lost` keeps them withdrawn. */
  close(id: string, outcome: DisputeOutcome, request: RequestRef = NO_REQUEST): Dispute {
    const dispute = this.account.disputes.get(id);
    if (!dispute) throw new Problem(404, 'dispute_not_found', `No such dispute: '${id}'.`);
    if (isClosed(dispute)) {
      throw new Problem(400, 'dispute_closed', `The dispute ${id} is already closed (${dispute.status}).`);
    }
    this.finish(dispute, outcome, request);
    return dispute;
  }

  /** `POST /v1/disputes/:id/close`: the merchant accepts the dispute, which is then lost. */
  acceptByApi(id: string, request: RequestRef): Dispute {
    const dispute = this.get(id);
    if (isClosed(dispute)) {
      throw invalidRequest(`This dispute is already closed (status ${dispute.status}).`, { code: 'dispute_closed' });
    }
    this.finish(dispute, 'lost', request);
    return dispute;
  }

  get(id: string): Dispute {
    const dispute = this.account.disputes.get(id);
    if (!dispute) throw resourceMissing('dispute', id);
    return dispute;
  }

  /** Newest first, as Stripe lists. */
  list(filter: { charge?: string; paymentIntent?: string }): Dispute[] {
    return [...this.account.disputes.values()]
      .filter((d) => filter.charge === undefined || d.charge === filter.charge)
      .filter((d) => filter.paymentIntent === undefined || d.payment_intent === filter.paymentIntent)
      .reverse();
  }

  ofCharge(chargeId: string): Dispute | undefined {
    return [...this.account.disputes.values()].find((d) => d.charge === chargeId);
  }

  private open(charge: Charge, reason: DisputeReason): Dispute {
    const created = this.account.nowSeconds();
    const details = charge.payment_method_details;
    // A bank debit or Link payment is no card network's: no Visa code and no card details.
    const card = details.type === 'card' ? details.card : null;
    const networkReasonCode = card ? (VISA_REASON_CODES[reason] ?? null) : null;
    const dispute: Dispute = {
      id: newId.dispute(),
      object: 'dispute',
      amount: charge.amount,
      balance_transactions: [],
      charge: charge.id,
      created,
      currency: charge.currency,
      enhanced_eligibility_types: [],
      evidence: emptyEvidence(),
      evidence_details: {
        due_by: created + EVIDENCE_WINDOW_SECONDS,
        enhanced_eligibility: {},
        has_evidence: false,
        past_due: false,
        submission_count: 0,
        submission_method: 'not_submitted',
      },
      intended_submission_method: null,
      is_charge_refundable: false,
      livemode: false,
      metadata: {},
      network_reason_code: networkReasonCode,
      payment_intent: typeof charge.payment_intent === 'string' ? charge.payment_intent : charge.payment_intent.id,
      ...(card
        ? {
            payment_method_details: {
              card: {
                brand: card.brand,
                case_type: 'chargeback' as const,
                network: card.network,
                network_reason_code: networkReasonCode,
              },
              type: 'card' as const,
            },
          }
        : {}),
      reason,
      status: 'needs_response',
    };
    this.account.disputes.set(dispute.id, dispute);
    charge.disputed = true;
    this.account.emit('charge.dispute.created', dispute, NO_REQUEST);
    this.account.emit('charge.dispute.funds_withdrawn', dispute, NO_REQUEST);
    return dispute;
  }

  private finish(dispute: Dispute, outcome: DisputeOutcome, request: RequestRef): void {
    dispute.status = outcome;
    dispute.is_charge_refundable = outcome === 'won';
    this.account.emit('charge.dispute.closed', dispute, request);
    if (outcome === 'won') this.account.emit('charge.dispute.funds_reinstated', dispute, request);
  }
}

function isClosed(dispute: Dispute): boolean {
  return dispute.status === 'won' || dispute.status === 'lost';
}

function emptyEvidence(): DisputeEvidence {
  const fields = [
    'access_activity_log',
    'billing_address',
    'cancellation_policy',
    'cancellation_policy_disclosure',
    'cancellation_rebuttal',
    'customer_communication',
    'customer_email_address',
    'customer_name',
    'customer_purchase_ip',
    'customer_signature',
    'duplicate_charge_documentation',
    'duplicate_charge_explanation',
    'duplicate_charge_id',
    'product_description',
    'receipt',
    'refund_policy',
    'refund_policy_disclosure',
    'refund_refusal_explanation',
    'service_date',
    'service_documentation',
    'shipping_address',
    'shipping_carrier',
    'shipping_date',
    'shipping_documentation',
    'shipping_tracking_number',
    'uncategorized_file',
    'uncategorized_text',
  ] as const;
  return {
    ...(Object.fromEntries(fields.map((f) => [f, null])) as Record<(typeof fields)[number], null>),
    enhanced_evidence: {},
  };
}
