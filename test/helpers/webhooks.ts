import Stripe from 'stripe';
import { type System, WEBHOOK_SECRET } from './system';

/**
 * A Stripe event around `object` as Stripe sends it (test mode, created now, a fresh id);
 * `envelope` overrides its fields, and a field set to undefined is left out.
 */
export function stripeEvent(
  type: string,
  object: Record<string, unknown>,
  envelope: Record<string, unknown> = {},
): Record<string, unknown> {
  return {
    id: `evt_forged_${Math.random().toString(36).slice(2)}`,
    object: 'event',
    api_version: '2024-06-20',
    created: Math.floor(Date.now() / 1000),
    livemode: false,
    pending_webhooks: 1,
    type,
    data: { object },
    ...envelope,
  };
}

/** Posts `event` to the API's webhook signed as Stripe would (the test knows the endpoint secret). */
export async function postEvent(sys: System, event: unknown) {
  const payload = JSON.stringify(event);
  const header = Stripe.webhooks.generateTestHeaderString({ payload, secret: WEBHOOK_SECRET });
  return sys.api('POST', '/v1/webhooks/stripe', payload, {
    'content-type': 'application/json',
    'stripe-signature': header,
  });
}
