import type Stripe from 'stripe';
import type { PaymentEvidence } from '../vocabulary/rules';
import { addressKey } from '../store/addresses';
import { stripeCaller, type StripeStepDeps } from './stripe';

// The Stripe read of the purchase rules (store/rules/): what paid a session and where it ships, in
// one call, whatever rules the product has. Reads carry no idempotency key; retried like every
// Stripe call.

/** The method that paid, from the charge's `payment_method_details`: its type and the fingerprint Stripe gives it. */
export function paymentMethodOf(charge: Stripe.Charge | null | undefined): PaymentEvidence['method'] {
  const details = charge?.payment_method_details;
  if (!details) return undefined;
  // Every method Stripe fingerprints keeps it under its own type's key (card, sepa_debit, bacs_debit,
  // us_bank_account, …); a wallet's card is still `card`. Link and most others carry none.
  const own = (details as unknown as Record<string, { fingerprint?: string | null } | undefined>)[details.type];
  const fingerprint = own?.fingerprint ?? undefined;
  return { type: details.type, ...(fingerprint ? { fingerprint } : {}) };
}

export function createPaymentEvidenceSteps({ stripe, onStripeCall }: Pick<StripeStepDeps, 'stripe' | 'onStripeCall'>) {
  const { guarded } = stripeCaller(onStripeCall);
  return {
    /**
     * What a paid session shows the purchase rules: the session with its PaymentIntent and that
     * intent's latest charge expanded (one call), reduced to the method's type and fingerprint, the
     * shipping address's key (normalised and hashed, store/addresses.ts: no address reaches the
     * workflow's history) and its country.
     */
    async readPaymentEvidence(sessionId: string): Promise<PaymentEvidence> {
      const session = await guarded('checkout.sessions.retrieve', 'reading the payment', () =>
        stripe.checkout.sessions.retrieve(sessionId, { expand: ['payment_intent.latest_charge'] }),
      );
      const pi = typeof session.payment_intent === 'object' ? session.payment_intent : null;
      const charge = pi && typeof pi.latest_charge === 'object' ? pi.latest_charge : null;
      const method = paymentMethodOf(charge);
      const address = session.collected_information?.shipping_details?.address;
      const paymentIntentId =
        pi?.id ?? (typeof session.payment_intent === 'string' ? session.payment_intent : undefined);
      return {
        ...(paymentIntentId ? { paymentIntentId } : {}),
        ...(method ? { method } : {}),
        ...(address ? { addressKey: addressKey(address) } : {}),
        ...(address?.country ? { shippingCountry: address.country } : {}),
      };
    },

    /**
     * The key of the shipping address Checkout collected on the session; null when none was. The
     * per-address limit's own read before the rules read the payment once (readPaymentEvidence): kept
     * for sagas whose histories call it.
     */
    async shippingAddressKey(sessionId: string): Promise<string | null> {
      const session = await guarded('checkout.sessions.retrieve', 'reading the shipping address', () =>
        stripe.checkout.sessions.retrieve(sessionId),
      );
      const address = session.collected_information?.shipping_details?.address;
      return address ? addressKey(address) : null;
    },
  };
}
