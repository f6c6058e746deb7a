import { Disputes } from './disputes';
import type { Charge, CheckoutSession, LineItem, PaymentIntent, PaymentMethod, Refund, StripeEvent } from './objects';
import { type PayOptions, type PayOutcome, Payments } from './payments';
import { type RefundInput, Refunds } from './refunds';
import { type SessionInput, Sessions } from './sessions';
import { Account, type AccountSettings, type AccountSnapshot, type RequestRef, type StoreDeps } from './state';

export { formatMoney } from './money';
export { PAY_OUTCOMES, type PayOutcome } from './payments';
export type { RefundInput } from './refunds';
export type { LineItemInput, SessionInput } from './sessions';
export type { AccountSnapshot, RequestRef, StoreDeps } from './state';

/**
 * The emulated Stripe account: its state (`state.ts`) and the rules for each kind of object, one
 * module each (`sessions.ts`, `payments.ts`, `refunds.ts`, `disputes.ts`). Every method is synchronous,
 * so each API call is atomic.
 */
export class EmulatorStore {
  readonly account: Account;
  readonly sessions: Sessions;
  readonly payments: Payments;
  readonly refunds: Refunds;
  readonly disputes: Disputes;

  constructor(deps: StoreDeps) {
    this.account = new Account(deps);
    this.sessions = new Sessions(this.account);
    this.payments = new Payments(this.account, this.sessions);
    this.refunds = new Refunds(this.account);
    this.disputes = new Disputes(this.account);
  }

  nowSeconds(): number {
    return this.account.nowSeconds();
  }

  reset(): void {
    this.account.reset();
  }

  snapshot(): AccountSnapshot {
    return this.account.snapshot();
  }

  /** Loads a snapshot; lapsed sessions expire on the next read or sweep, as they would have. */
  restore(snapshot: AccountSnapshot): void {
    this.account.restore(snapshot);
  }

  get settings(): AccountSettings {
    return { ...this.account.settings };
  }

  configure(changes: Partial<AccountSettings>): AccountSettings {
    this.account.settings = { ...this.account.settings, ...changes };
    return this.settings;
  }

  // The calls the API routes and the hosted page make, by their Stripe names.

  createSession(input: SessionInput): CheckoutSession {
    return this.sessions.create(input);
  }

  getLineItems(id: string): LineItem[] {
    return this.sessions.lineItemsOf(id);
  }

  getSession(id: string): CheckoutSession {
    return this.sessions.get(id);
  }

  findSession(id: string): CheckoutSession | undefined {
    return this.sessions.find(id);
  }

  listSessions(filter: { paymentIntent?: string; status?: string }): CheckoutSession[] {
    return this.sessions.list(filter);
  }

  expireSession(id: string, request: RequestRef): CheckoutSession {
    return this.sessions.expireByApi(id, request);
  }

  expireDue(): number {
    return this.sessions.expireDue();
  }

  lapseSession(id: string): CheckoutSession {
    return this.sessions.lapse(id);
  }

  pay(id: string, outcome: PayOutcome, options: PayOptions = {}): CheckoutSession {
    return this.payments.pay(id, outcome, options);
  }

  getPaymentIntent(id: string, param = 'id'): PaymentIntent {
    return this.account.getPaymentIntent(id, param);
  }

  getCharge(id: string, param = 'id'): Charge {
    return this.account.getCharge(id, param);
  }

  getPaymentMethod(id: string, param = 'id'): PaymentMethod {
    return this.account.getPaymentMethod(id, param);
  }

  createRefund(input: RefundInput, request: RequestRef): Refund {
    return this.refunds.create(input, request);
  }

  getRefund(id: string): Refund {
    return this.refunds.get(id);
  }

  listRefunds(filter: { paymentIntent?: string; charge?: string }): Refund[] {
    return this.refunds.list(filter);
  }

  getEvent(id: string): StripeEvent {
    return this.account.getEvent(id);
  }

  /** Events oldest first. */
  listEvents(filter: { type?: string } = {}): StripeEvent[] {
    return this.account.listEvents(filter);
  }
}
