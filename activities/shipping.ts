import { addressKey } from '../store/addresses';
import { stripeCaller, type StripeStepDeps } from './stripe';

// The Stripe read of the per-address limit (`maxPerAddress`): where the buyer asked Checkout to ship.

/**
 * The key of the shipping address Checkout collected on the session (Stripe's
 * `collected_information.shipping_details.address` in the pinned API version), normalised and hashed
 * (store/addresses.ts) so no address reaches the workflow's history; null when none was collected.
 * A read: no idempotency key; retried like every Stripe call.
 */
export function createShippingSteps({ stripe, onStripeCall }: Pick<StripeStepDeps, 'stripe' | 'onStripeCall'>) {
  const { guarded } = stripeCaller(onStripeCall);
  return {
    async shippingAddressKey(sessionId: string): Promise<string | null> {
      const session = await guarded('checkout.sessions.retrieve', 'reading the shipping address', () =>
        stripe.checkout.sessions.retrieve(sessionId),
      );
      const address = session.collected_information?.shipping_details?.address;
      return address ? addressKey(address) : null;
    },
  };
}
