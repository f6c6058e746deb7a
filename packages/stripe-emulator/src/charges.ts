import type { BuyerMethod } from './common-types';
import { newId } from './ids';
import { billingDetails, chargeMethodDetails, paymentMethodObject } from './method-details';
import type { Charge, PaymentIntent } from './objects';
import type { Account } from './state';

/**
 * One attempt to pay: a PaymentMethod for what the buyer entered and a Charge on it, `succeeded`,
 * `failed` (declined) or `pending` (a delayed payment until it settles).
 */
export function newCharge(
  account: Account,
  intent: PaymentIntent,
  status: Charge['status'],
  method: BuyerMethod,
): Charge {
  const failed = status === 'failed';
  const succeeded = status === 'succeeded';
  const created = account.nowSeconds();
  const paymentMethod = paymentMethodObject(newId.paymentMethod(), method, created);
  account.paymentMethods.set(paymentMethod.id, paymentMethod);
  const charge: Charge = {
    id: newId.charge(),
    object: 'charge',
    amount: intent.amount,
    amount_captured: succeeded ? intent.amount : 0,
    amount_refunded: 0,
    application: null,
    application_fee: null,
    application_fee_amount: null,
    balance_transaction: null,
    billing_details: billingDetails(method),
    calculated_statement_descriptor: 'FLASH SALE EMULATOR',
    captured: succeeded,
    created,
    currency: intent.currency,
    customer: null,
    description: intent.description,
    disputed: false,
    failure_balance_transaction: null,
    failure_code: failed ? 'card_declined' : null,
    failure_message: failed ? 'Your card was declined.' : null,
    fraud_details: {},
    livemode: false,
    metadata: { ...intent.metadata },
    on_behalf_of: null,
    outcome: failed ? declinedOutcome('generic_decline') : approvedOutcome(),
    paid: succeeded,
    payment_intent: intent.id,
    payment_method: paymentMethod.id,
    payment_method_details: chargeMethodDetails(
      method,
      newId.mandate(),
      failed ? null : { amount: intent.amount, code: '123456' },
    ),
    receipt_email: intent.receipt_email,
    receipt_number: null,
    receipt_url: null,
    refunded: false,
    review: null,
    shipping: null,
    source: null,
    source_transfer: null,
    statement_descriptor: null,
    statement_descriptor_suffix: null,
    status,
    transfer_data: null,
    transfer_group: null,
  };
  account.charges.set(charge.id, charge);
  return charge;
}

export function approvedOutcome(): Charge['outcome'] {
  return {
    advice_code: null,
    network_advice_code: null,
    network_decline_code: null,
    network_status: 'approved_by_network',
    reason: null,
    risk_level: 'normal',
    risk_score: 20,
    seller_message: 'Payment complete.',
    type: 'authorized',
  };
}

export function declinedOutcome(reason: string): Charge['outcome'] {
  return {
    advice_code: null,
    network_advice_code: null,
    network_decline_code: null,
    network_status: 'declined_by_network',
    reason,
    risk_level: 'normal',
    risk_score: 20,
    seller_message: 'The bank did not return any further details with this decline.',
    type: 'issuer_declined',
  };
}
