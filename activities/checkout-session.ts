import type Stripe from 'stripe';
import { STRIPE_MIN_SESSION_SECONDS } from '../vocabulary/limits';

// The Checkout Session request of one purchase. Stripe replays a request sent again under the same
// idempotency key only when its parameters are the same, so everything here is derived from the
// hold and from the session's expiry, which is chosen once: the first attempt stores it with the
// purchase, every later attempt and closeUnansweredCheckout send it again.

export interface OpenCheckoutInput {
  purchaseId: string;
  sku: string;
  buyerId: string;
  quantity: number;
  productName: string;
  unitAmountCents: number;
  currency: string;
  holdExpiresAt: string;
  holdSeconds: number;
  /** Where the buyer may ship (ISO codes): Checkout collects the address (`shipping_address_collection`). */
  shippingCountries?: string[];
  /** The payment methods Checkout may offer (`allowed_payment_method_types`); absent: those Stripe finds eligible. */
  paymentMethodTypes?: string[];
}

/**
 * Attempts of the session step that faults other than a rate limit (5xx, no answer) may fail before
 * the purchase fails and is compensated: a Stripe outage gives the unit back within seconds. Rate
 * limits are only waited out, for as long as the hold lasts.
 */
export const CHECKOUT_ATTEMPTS_ON_FAULTS = 6;

/** Room for the create's retries after the expiry was chosen (each must still be Stripe's minimum ahead). */
const SESSION_MARGIN_SECONDS = 5 * 60;

/**
 * When the session expires, chosen as it is first created (`nowMs`): at the hold's end when that is
 * far enough ahead for Stripe, else Stripe's minimum from now, and the saga expires it at the hold's
 * end itself. Derived at creation, not when the hold was taken: a session that waited for the Stripe
 * budget still gets the hold's end whenever Stripe allows it.
 */
export function sessionExpiry(holdExpiresAt: string, nowMs: number): Date {
  const holdEnd = Math.ceil(Date.parse(holdExpiresAt) / 1000);
  const earliest = Math.ceil(nowMs / 1000) + STRIPE_MIN_SESSION_SECONDS + SESSION_MARGIN_SECONDS;
  return new Date(Math.max(holdEnd, earliest) * 1000);
}

/**
 * What the buyer reads above Stripe's Pay button: until when the unit is theirs. The session itself
 * may live longer than the hold (Stripe's minimum, STRIPE_MIN_SESSION_SECONDS), so the text names the hold's end.
 */
export function reservedUntilText(input: OpenCheckoutInput): string {
  const clock = new Date(input.holdExpiresAt).toISOString().slice(11, 16);
  const them = input.quantity > 1;
  const what = them ? `${input.quantity} × ${input.productName} are` : `${input.productName} is`;
  return (
    `${what} reserved for you until ${clock} UTC. Pay before then to keep ${them ? 'them' : 'it'}: ` +
    'a payment made later is refunded if nothing is left by then.'
  ).slice(0, 1200);
}

/** The request itself, with the expiry chosen for this purchase. */
export function sessionRequest(
  input: OpenCheckoutInput,
  expiresAt: Date,
  urls: { successUrl: string; cancelUrl: string },
): Stripe.Checkout.SessionCreateParams {
  const fill = (url: string) => url.replace('{purchaseId}', encodeURIComponent(input.purchaseId));
  return {
    mode: 'payment',
    line_items: [
      {
        quantity: input.quantity,
        price_data: {
          currency: input.currency,
          unit_amount: input.unitAmountCents,
          product_data: { name: input.productName },
        },
      },
    ],
    success_url: fill(urls.successUrl),
    cancel_url: fill(urls.cancelUrl),
    expires_at: Math.round(expiresAt.getTime() / 1000),
    custom_text: { submit: { message: reservedUntilText(input) } },
    client_reference_id: input.purchaseId,
    metadata: { purchase_id: input.purchaseId, sku: input.sku, buyer_id: input.buyerId },
    payment_intent_data: { metadata: { purchase_id: input.purchaseId, sku: input.sku } },
    ...(input.paymentMethodTypes?.length ? { allowed_payment_method_types: input.paymentMethodTypes } : {}),
    ...(input.shippingCountries?.length
      ? {
          shipping_address_collection: {
            allowed_countries: input.shippingCountries,
          },
        }
      : {}),
  };
}
