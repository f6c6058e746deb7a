import { createHash } from 'node:crypto';

import { type BuyerMethod, PAYMENT_METHOD_TYPES, type PaymentMethodType } from './common-types';
import { Problem, invalidParam, invalidRequest } from './errors';
import type { CheckoutSession } from './objects';
import type { ParamReader } from './params';

// Which payment methods a Checkout Session offers and which one the buyer may pay it with. The
// emulated account has the five methods the emulator can pay with turned on, as in a Dashboard (their
// list is in common-types.ts); what each one looks like on the charge and as a PaymentMethod is in
// method-details.ts.

/**
 * Bank debits are delayed notification methods: Checkout completes the session `unpaid` and the
 * money is known days later, so they never succeed or fail on the spot.
 */
export const DELAYED_TYPES: readonly PaymentMethodType[] = ['sepa_debit', 'bacs_debit', 'us_bank_account'];

/** Stripe's currency rules for the bank debits (cards and Link take any currency the emulator sees). */
const ONLY_CURRENCY: Partial<Record<PaymentMethodType, string>> = {
  sepa_debit: 'eur',
  bacs_debit: 'gbp',
  us_bank_account: 'usd',
};

/** What the buyer chose (`paymentMethod` of the pay control); the rest comes from the session. */
export interface PaymentMethodChoice {
  type: PaymentMethodType;
  /** The card's or bank account's; a Link payment has none. */
  fingerprint?: string;
  /** The Link account's email; only for `link`. */
  email?: string;
}

export function isPaymentMethodType(value: unknown): value is PaymentMethodType {
  return typeof value === 'string' && (PAYMENT_METHOD_TYPES as readonly string[]).includes(value);
}

export function isDelayed(type: PaymentMethodType): boolean {
  return DELAYED_TYPES.includes(type);
}

function takesCurrency(type: PaymentMethodType, currency: string): boolean {
  const only = ONLY_CURRENCY[type];
  return only === undefined || only === currency;
}

/** The payment-method parameters of a session create, as given. */
export interface SessionMethodParams {
  /** `payment_method_types`: the list before API version 2026-09-30 (see README). */
  explicit: string[] | null;
  /** `allowed_payment_method_types`: a filter on the methods the account offers. */
  allowed: string[] | null;
  /** `excluded_payment_method_types`. */
  excluded: string[] | null;
}

export function readSessionMethodParams(params: ParamReader): SessionMethodParams {
  const read = (key: string): string[] | null => {
    if (!params.has(key)) return null;
    const types = params.strings(key);
    types.forEach((type, index) => {
      // Stripe's list of types that can be excluded has no link.
      if (!/^[a-z][a-z0-9_]{0,49}$/.test(type) || (key === 'excluded_payment_method_types' && type === 'link')) {
        throw invalidParam(
          `${key}[${index}]`,
          `Invalid ${key}[${index}]: ${type} is not a payment method type it takes`,
        );
      }
    });
    return types;
  };
  return {
    explicit: read('payment_method_types'),
    allowed: read('allowed_payment_method_types'),
    excluded: read('excluded_payment_method_types'),
  };
}

/**
 * The session's `payment_method_types`: without a list of the caller's, every method the account has
 * on that takes the session's currency (dynamic payment methods), then `allowed` filters and
 * `excluded` removes. A listed method the emulator cannot pay with, or one that does not take the
 * currency, is refused: the hosted page could not offer it.
 */
export function sessionPaymentMethodTypes(currency: string, params: SessionMethodParams): PaymentMethodType[] {
  let types: PaymentMethodType[];
  if (params.explicit) {
    types = [];
    params.explicit.forEach((type, index) => {
      const param = `payment_method_types[${index}]`;
      if (!isPaymentMethodType(type)) {
        throw invalidParam(
          param,
          `The payments emulator can only pay with ${PAYMENT_METHOD_TYPES.join(', ')}, not ${type}.`,
        );
      }
      if (!takesCurrency(type, currency)) {
        throw invalidParam(
          param,
          `The currency provided (${currency}) is invalid for the payment method type ${type}, which only supports ${ONLY_CURRENCY[type]}.`,
        );
      }
      if (!types.includes(type)) types.push(type);
    });
  } else {
    types = PAYMENT_METHOD_TYPES.filter((type) => takesCurrency(type, currency));
  }
  const { allowed, excluded } = params;
  if (allowed) types = types.filter((type) => allowed.includes(type));
  if (excluded) types = types.filter((type) => !excluded.includes(type));
  if (types.length === 0) {
    throw invalidRequest(
      `No payment method type is left for this Checkout Session in ${currency}: the account offers ` +
        `${PAYMENT_METHOD_TYPES.filter((type) => takesCurrency(type, currency)).join(', ')} in that currency.`,
    );
  }
  return types;
}

/**
 * The buyer's method for one attempt, with its defaults, or a 400 problem when the hosted page would
 * not have offered it. Called only for the outcomes that make a charge.
 */
export function buyerMethod(
  session: CheckoutSession,
  outcome: 'succeeded' | 'declined' | 'async_pending',
  choice: PaymentMethodChoice = { type: 'card' },
): BuyerMethod {
  const { type } = choice;
  if (!session.payment_method_types.includes(type)) {
    const currency = ONLY_CURRENCY[type];
    const why =
      currency && currency !== session.currency
        ? ` (${type} takes only ${currency}; the session is in ${session.currency})`
        : '';
    throw new Problem(
      400,
      'payment_method_not_offered',
      `Checkout Session ${session.id} offers ${session.payment_method_types.join(', ')}, not ${type}${why}.`,
    );
  }
  if (isDelayed(type) && outcome !== 'async_pending') {
    throw new Problem(
      400,
      'payment_method_delayed',
      `${type} is a delayed payment method: Stripe never ${outcome === 'succeeded' ? 'settles' : 'declines'} it at once. Pay with outcome async_pending, then settle it with async_succeeded or async_failed.`,
    );
  }
  const sessionEmail = session.customer_email;
  if (type === 'link') {
    if (choice.email && sessionEmail && choice.email !== sessionEmail) {
      throw new Problem(
        400,
        'invalid_payment_method',
        `Checkout Session ${session.id} was created with customer_email ${sessionEmail}: the buyer's Link account is that one, not ${choice.email}.`,
      );
    }
    const email = choice.email ?? sessionEmail ?? `link-${sessionToken(session.id, 'link').toLowerCase()}@example.com`;
    return { type, fingerprint: null, email };
  }
  return {
    type,
    fingerprint: choice.fingerprint ?? defaultFingerprint(session.id, type),
    email: sessionEmail ?? 'buyer@example.com',
  };
}

/**
 * Stripe fingerprints are 16 alphanumerics; the default is derived from the session, so it is the
 * same on every try of one session and another on another session (and the card's is what it was
 * before the other methods existed, so state files keep their meaning).
 */
function defaultFingerprint(sessionId: string, type: PaymentMethodType = 'card'): string {
  return sessionToken(sessionId, type);
}

function sessionToken(sessionId: string, type: PaymentMethodType): string {
  return createHash('sha256')
    .update(`${type}:${sessionId}`)
    .digest('base64')
    .replace(/[^A-Za-z0-9]/g, '')
    .slice(0, 16);
}

/**
 * The `paymentMethod` of the pay control: `{type, fingerprint?}`, or `{type: 'link', email?}`.
 * A fingerprint is 1 to 64 of `A-Za-z0-9_-`.
 */
export function readPaymentMethodChoice(value: unknown): PaymentMethodChoice {
  const bad = (detail: string): Problem => new Problem(400, 'invalid_payment_method', detail);
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw bad('paymentMethod must be an object such as {"type": "sepa_debit", "fingerprint": "Xt5EWLLDS7FJjR1c"}.');
  }
  const { type, fingerprint, email, ...rest } = value as Record<string, unknown>;
  if (Object.keys(rest).length > 0) {
    throw bad(`paymentMethod accepts only type, fingerprint and email, not ${Object.keys(rest).join(', ')}.`);
  }
  if (!isPaymentMethodType(type)) {
    throw bad(`paymentMethod.type must be one of ${PAYMENT_METHOD_TYPES.join(', ')}.`);
  }
  const choice: PaymentMethodChoice = { type };
  if (fingerprint !== undefined && fingerprint !== null) {
    if (type === 'link') {
      throw bad(
        'Stripe gives a Link payment no fingerprint (payment_method_details.link has only country): name the Link account with paymentMethod.email.',
      );
    }
    if (typeof fingerprint !== 'string' || !/^[A-Za-z0-9_-]{1,64}$/.test(fingerprint)) {
      throw bad('paymentMethod.fingerprint must be 1 to 64 letters, digits, _ or -.');
    }
    choice.fingerprint = fingerprint;
  }
  if (email !== undefined && email !== null) {
    if (type !== 'link') throw bad('paymentMethod.email applies only to type link (the Link account).');
    if (typeof email !== 'string' || email.length > 254 || !/^[^\s@]+@[^\s@]+$/.test(email)) {
      throw bad('paymentMethod.email must be an email address.');
    }
    choice.email = email;
  }
  return choice;
}
