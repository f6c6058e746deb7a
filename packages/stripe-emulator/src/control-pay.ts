import type { Router } from '@koa/router';

import { optionalBoolean, readJson } from './body';
import { Problem } from './errors';
import { type PaymentMethodChoice, readPaymentMethodChoice } from './payment-methods';
import { CHARGING_OUTCOMES, type PayOptions } from './payments';
import { readShipping } from './shipping';
import { type EmulatorStore, PAY_OUTCOMES, type PayOutcome } from './store';

/** The body of the pay control besides `outcome`, for callers that build it in TypeScript. */
export interface PayControlExtras {
  force?: boolean;
  paymentMethod?: PaymentMethodChoice;
  card?: { fingerprint?: string };
  shipping?: { name: string; address: object };
}

/**
 * `POST /sessions/:id/pay`: the buyer's outcome for a session, `succeeded`, `declined`,
 * `async_pending`, then `async_succeeded` or `async_failed`, with the events Stripe would send.
 * `force: true` lets `succeeded` complete an expired session (a payment that raced the expiry).
 * `paymentMethod: {type, fingerprint?, email?}` is what the buyer pays with (card by default);
 * `card: {fingerprint}`, from before the other methods, is the same as `{type: 'card', fingerprint}`.
 */
export function payControlRoute(router: Router, store: EmulatorStore): void {
  router.post('/sessions/:id/pay', async (ctx) => {
    const body = await readJson(ctx);
    const outcome = body.outcome;
    if (typeof outcome !== 'string' || !(PAY_OUTCOMES as readonly string[]).includes(outcome)) {
      throw new Problem(400, 'invalid_outcome', `outcome must be one of ${PAY_OUTCOMES.join(', ')}.`);
    }
    const force = optionalBoolean(body, 'force') ?? false;
    if (force && outcome !== 'succeeded') {
      throw new Problem(400, 'invalid_force', 'force applies only to outcome succeeded.');
    }
    const options: PayOptions = { force };
    const charging = CHARGING_OUTCOMES.includes(outcome as PayOutcome);
    if (body.card !== undefined) {
      if (!charging) {
        throw new Problem(400, 'invalid_card', `card applies only to outcomes ${CHARGING_OUTCOMES.join(', ')}.`);
      }
      if (body.paymentMethod !== undefined) {
        throw new Problem(400, 'invalid_card', 'Give paymentMethod or card (the older form of a card), not both.');
      }
      options.paymentMethod = readCard(body.card);
    }
    if (body.paymentMethod !== undefined) {
      if (!charging) {
        // The settling outcomes act on the method the delayed payment was started with.
        throw new Problem(
          400,
          'invalid_payment_method',
          `paymentMethod applies only to outcomes ${CHARGING_OUTCOMES.join(', ')}.`,
        );
      }
      options.paymentMethod = readPaymentMethodChoice(body.paymentMethod);
    }
    if (body.shipping !== undefined) {
      if (outcome !== 'succeeded' && outcome !== 'async_pending') {
        throw new Problem(400, 'invalid_shipping', 'shipping applies only to outcomes succeeded and async_pending.');
      }
      options.shipping = readShipping(body.shipping);
    }
    ctx.body = store.pay(ctx.params.id, outcome as PayOutcome, options);
  });
}

function readCard(value: unknown): PaymentMethodChoice {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new Problem(400, 'invalid_card', 'card must be an object such as {"fingerprint": "Xt5EWLLDS7FJjR1c"}.');
  }
  const card = value as Record<string, unknown>;
  const unknown = Object.keys(card).filter((key) => key !== 'fingerprint');
  if (unknown.length > 0) {
    throw new Problem(400, 'invalid_card', `card accepts only fingerprint, not ${unknown.join(', ')}.`);
  }
  if (card.fingerprint === undefined || card.fingerprint === null) return { type: 'card' };
  if (typeof card.fingerprint !== 'string' || !/^[A-Za-z0-9_-]{1,64}$/.test(card.fingerprint)) {
    throw new Problem(400, 'invalid_card', 'card.fingerprint must be 1 to 64 letters, digits, _ or -.');
  }
  return { type: 'card', fingerprint: card.fingerprint };
}
