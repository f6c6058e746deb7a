import test from 'ava';
import type Stripe from 'stripe';

import type { Charge, Dispute, PaymentMethod, Refund } from '../../src/objects';

// The emulator's own declarations of the objects it sends must fill every field stripe-node's types
// require, with compatible types: `npx tsc --noEmit` fails on these lines if one is missing or wrong.
// (Expandable references are compared as ids: the emulator's PaymentIntent is a subset of Stripe's.)
type AsIds<T, K extends keyof T> = Omit<T, K> & { [P in K]: Extract<T[P], string> };

export const chargeMatches = (charge: AsIds<Charge, 'payment_intent'>): Stripe.Charge => charge;
export const refundMatches = (refund: AsIds<Refund, 'charge' | 'payment_intent'>): Stripe.Refund => refund;
export const disputeMatches = (dispute: AsIds<Dispute, 'charge' | 'payment_intent'>): Stripe.Dispute => dispute;
export const paymentMethodMatches = (method: PaymentMethod): Stripe.PaymentMethod => method;

test('the emulator declares Charge, Refund, Dispute and PaymentMethod with every field of stripe-node’s types (checked by tsc)', (t) => {
  t.is(typeof chargeMatches, 'function');
  t.is(typeof paymentMethodMatches, 'function');
  t.is(typeof refundMatches, 'function');
  t.is(typeof disputeMatches, 'function');
});
