import type { PurchaseInput, PurchaseState } from '../vocabulary';
import type { Attended } from './attended';
import { acts, stripeActs } from './proxies';

// The limits per card and per address as the saga asked them before 1.2, one Stripe read and one
// claim per rule. Sagas whose histories reached them replay them here; every saga that reaches the
// rules now asks them once (store/rules/, PurchaseSaga.overLimit). Delete this file once no history
// from before 1.2 can be running or replayed (docs/architecture.md, "Changing a workflow").

/** The marker that separates the two: present in a history, the rules were asked once. */
export const PAYMENT_RULES_PATCH = 'payment-rules-once';

/**
 * What these limits read and drive of the saga (PurchaseSaga, saga.ts, which calls them and so is
 * not imported here).
 */
export interface SagaBefore12 {
  readonly input: PurchaseInput;
  readonly state: PurchaseState;
  learnPaymentIntent(): Promise<void>;
  attend<T>(what: string, call: () => Promise<T>): Promise<Attended<T>>;
}

/** The limits per card and per address: null within them, else why the payment goes back and the buyer's notification kind. */
export async function limitsBefore12(saga: SagaBefore12): Promise<{ reason: string; kind: string } | null> {
  const { sku, terms } = saga.input;
  // No history recorded before 1.2 has a card limit (test/replay/histories/): the card's path is
  // replayed by none, and no new saga takes it.
  /* istanbul ignore if -- no history recorded before 1.2 has a card limit: no replay refuses by card */
  if (!(await cardWithinLimit(saga))) {
    const reason = `limit per card: this card already bought the most of ${sku} one card may (${terms?.maxPerCard})`;
    return { reason, kind: 'refunded_card_limit' };
  }
  /* istanbul ignore else -- every history before 1.2 that reached here was refused by the address limit */
  if (!(await addressWithinLimit(saga))) {
    const reason = `limit per address: this shipping address already bought the most of ${sku} one address may (${terms?.maxPerAddress})`;
    return { reason, kind: 'refunded_address_limit' };
  }
  /* istanbul ignore next -- every history before 1.2 that reached here was refused by the address limit */
  return null;
}

/* istanbul ignore next -- no history recorded before 1.2 has a card limit (see limitsBefore12) */
async function cardWithinLimit(saga: SagaBefore12): Promise<boolean> {
  const maxPerCard = saga.input.terms?.maxPerCard;
  if (!maxPerCard) return true;
  await saga.learnPaymentIntent();
  const paymentIntentId = saga.state.paymentIntentId;
  if (!paymentIntentId) return true;
  const card = await saga.attend('reading the payment card', () => stripeActs().cardOfPayment(paymentIntentId));
  if (card.outcome !== 'done' || !card.value) return true;
  const { purchaseId, sku, quantity } = saga.input;
  return (await acts.claimCard({ purchaseId, sku, quantity, maxPerCard, fingerprint: card.value })) === 'claimed';
}

async function addressWithinLimit(saga: SagaBefore12): Promise<boolean> {
  const maxPerAddress = saga.input.terms?.maxPerAddress;
  const sessionId = saga.state.sessionId;
  /* istanbul ignore if -- every history before 1.2 that reached here had an address limit and a session */
  if (!maxPerAddress || !sessionId) return true;
  const key = await saga.attend('reading the shipping address', () => stripeActs().shippingAddressKey(sessionId));
  /* istanbul ignore if -- every history before 1.2 that reached here read an address */
  if (key.outcome !== 'done' || !key.value) return true;
  const { purchaseId, sku, quantity } = saga.input;
  return (await acts.claimAddress({ purchaseId, sku, quantity, maxPerAddress, addressKey: key.value })) === 'claimed';
}
