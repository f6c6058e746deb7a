import { randomUUID } from 'node:crypto';
import { ApplicationFailure } from '@temporalio/activity';
import type { Activities } from '../../../activities';
import type { ProductTerms, PurchaseInput, PurchaseState } from '../../../vocabulary';

// The fast tier's stand-in for Postgres and Stripe: every activity the workflows call, answered from
// memory. Each test opens a case with its own purchase id; every id the fakes hand out (session,
// PaymentIntent, refund) carries it, so one worker serves many tests at once and each call reaches
// the case it belongs to. A case answers as a happy world would unless the test says otherwise.

export type ActivityName = keyof Activities;
type Fakes = { [K in ActivityName]: (...args: Parameters<Activities[K]>) => ReturnType<Activities[K]> };
/** A test's own answers: any activity, given the case and the call's arguments. */
export type Overrides = {
  [K in ActivityName]?: (
    c: Case,
    ...args: Parameters<Activities[K]>
  ) => Awaited<ReturnType<Activities[K]>> | Promise<Awaited<ReturnType<Activities[K]>>>;
};

export const TERMS: ProductTerms = {
  name: 'Hoodie',
  priceCents: 8900,
  currency: 'eur',
  holdSeconds: 600,
  hasUnits: false,
};

/** Stripe's refusal of a request (a 4xx): what the Stripe steps throw, never retried by the activity. */
export function refusal(message: string): ApplicationFailure {
  return ApplicationFailure.nonRetryable(message, 'StripeRejected');
}

export class Case {
  readonly id = `p-${randomUUID().slice(0, 12)}`;
  readonly sessionId = `cs_${this.id}`;
  readonly paymentIntentId = `pi_${this.id}`;
  /** Every activity called for this case, in order, with its arguments. */
  readonly calls: Array<{ name: ActivityName; args: unknown[] }> = [];
  /** The purchase record, as recordPurchase writes it (loadPurchase reads it). */
  record: PurchaseState | null = null;
  /** The stray payment's record (recordStrayPayment). */
  readonly stray: Array<Record<string, unknown>> = [];
  readonly notified: string[] = [];
  readonly audit: string[] = [];
  /** How long takeHold's hold lasts. */
  holdMs = 20_000;
  private refunds = 0;

  constructor(readonly overrides: Overrides = {}) {}

  input(patch: Partial<PurchaseInput> = {}): PurchaseInput {
    return { purchaseId: this.id, sku: 'hoodie', buyerId: `b-${this.id}`, quantity: 1, terms: TERMS, ...patch };
  }

  /** The names of the activities called, in order (optionally only these). */
  names(...only: ActivityName[]): ActivityName[] {
    return this.calls.map((c) => c.name).filter((n) => only.length === 0 || only.includes(n));
  }

  count(name: ActivityName): number {
    return this.names(name).length;
  }

  nextRefundId(): string {
    return `re_${this.id}_${++this.refunds}`;
  }

  /** A payment event of this purchase's session (a fresh event id unless given). */
  event(
    type: import('../../../vocabulary').PaymentEventType,
    patch: Partial<import('../../../vocabulary').PaymentEvent> = {},
  ) {
    return { eventId: `evt_${randomUUID()}`, type, sessionId: this.sessionId, ...patch };
  }
}

/** The happy world's answers. */
const HAPPY: {
  [K in ActivityName]: (c: Case, ...args: Parameters<Activities[K]>) => Awaited<ReturnType<Activities[K]>>;
} = {
  takeHold: (c, input) => ({
    outcome: 'held',
    holdExpiresAt: new Date(Date.now() + c.holdMs).toISOString(),
    holdSeconds: c.holdMs / 1000,
    amountCents: TERMS.priceCents * input.quantity,
    unitAmountCents: TERMS.priceCents,
    currency: TERMS.currency,
    productName: TERMS.name,
    oversold: false,
  }),
  openCheckout: (c, input) => {
    const { record, ...rest } = input;
    c.record = {
      ...(c.record ?? {
        purchaseId: c.id,
        sku: rest.sku,
        buyerId: rest.buyerId,
        quantity: rest.quantity,
        status: 'holding',
      }),
      ...record,
      status: 'awaiting_payment',
      sessionId: c.sessionId,
    };
    return {
      sessionId: c.sessionId,
      url: `https://checkout.test/${c.sessionId}`,
      sessionExpiresAt: input.holdExpiresAt,
    };
  },
  closeUnansweredCheckout: () => null,
  expireCheckout: () => ({ status: 'expired', paymentStatus: 'unpaid' }),
  getSessionPayment: (c) => ({ status: 'complete', paymentStatus: 'paid', paymentIntentId: c.paymentIntentId }),
  readPaymentEvidence: (c) => ({ paymentIntentId: c.paymentIntentId, method: { type: 'card', fingerprint: 'fp_1' } }),
  shippingAddressKey: () => 'address-1',
  cardOfPayment: () => 'fp_1',
  refundPayment: (c) => ({ refundId: c.nextRefundId(), status: 'pending' }),
  getRefund: (_c, refundId) => ({ refundId, status: 'succeeded' }),
  // With the purchase's ending (a third argument) the record is written too: see World.activities.
  releaseHold: () => ({ released: true, status: 'released' }),
  extendHold: () => new Date(Date.now() + 3_600_000).toISOString(),
  convertHold: (c, purchaseId, sale) => {
    // The real step writes the sale's record in the same transaction.
    HAPPY.recordPurchase(c, purchaseId, sale);
    return 'sold';
  },
  retakeForLatePayment: () => ({ outcome: 'sold', oversold: false }),
  restockSale: () => true,
  recordPurchase: (c, purchaseId, patch) => {
    c.record = {
      ...(c.record ?? { purchaseId, sku: 'hoodie', buyerId: `b-${c.id}`, quantity: 1, status: 'holding' }),
      ...patch,
    };
  },
  judgePayment: () => null,
  claimCard: () => 'claimed',
  claimAddress: () => 'claimed',
  recordStrayPayment: (c, _sessionId, patch) => {
    c.stray.push(patch);
  },
  loadPurchase: (c) => (c.record ? { ...c.record } : null),
  notifyBuyer: (c, _p, _b, kind) => {
    c.notified.push(kind);
  },
  // Counted by its calls (c.count('notifyConfirmed')): c.notified keeps the refusals' notices.
  notifyConfirmed: () => undefined,
  recordShippingAddress: () => true,
  appendAudit: (c, _p, _actor, action) => {
    c.audit.push(action);
  },
};

/** The cases of one test file, and the activities its workers run. */
export class World {
  private readonly cases = new Map<string, Case>();

  open(overrides: Overrides = {}): Case {
    const c = new Case(overrides);
    this.cases.set(c.id, c);
    return c;
  }

  /** The case a call belongs to: the one whose id appears in its arguments. */
  private caseOf(name: string, args: unknown[]): Case {
    const text = JSON.stringify(args);
    const id = /p-[0-9a-f-]{12}/.exec(text)?.[0];
    const c = id ? this.cases.get(id) : undefined;
    if (!c) throw ApplicationFailure.nonRetryable(`no test case for ${name}(${text})`, 'NoTestCase');
    return c;
  }

  activities(): Fakes {
    const fakes: Record<string, (...args: unknown[]) => Promise<unknown>> = {};
    for (const name of Object.keys(HAPPY) as ActivityName[]) {
      fakes[name] = async (...args: unknown[]) => {
        const c = this.caseOf(name, args);
        c.calls.push({ name, args });
        const answer = (c.overrides[name] ?? HAPPY[name]) as (c: Case, ...a: unknown[]) => unknown;
        const result = await answer(c, ...args);
        // The real release writes the purchase's ending in its own transaction, whatever the hold's
        // answer (an override's too); a release that throws writes nothing.
        const [purchaseId, , ending] = args as [string, string, Partial<PurchaseState> | undefined];
        if (name === 'releaseHold' && ending) HAPPY.recordPurchase(c, purchaseId, ending);
        return result;
      };
    }
    return fakes as unknown as Fakes;
  }
}
