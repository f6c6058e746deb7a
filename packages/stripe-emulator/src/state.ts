import { resourceMissing } from './errors';
import { newId } from './ids';
import type {
  Charge,
  CheckoutSession,
  Dispute,
  EventType,
  LineItem,
  Metadata,
  PaymentIntent,
  PaymentMethod,
  Refund,
  RefundStatus,
  StripeEvent,
  StripeObject,
} from './objects';

/** What caused a change: the API request (echoed in `event.request`) or, for buyer actions, nothing. */
export interface RequestRef {
  id: string | null;
  idempotencyKey: string | null;
}

export const NO_REQUEST: RequestRef = { id: null, idempotencyKey: null };

export interface StoreDeps {
  /** Milliseconds since the epoch; an option so tests can move time forward. */
  now: () => number;
  apiVersion: string;
  /** Base URL of the hosted checkout page, resolved when the server is listening. */
  checkoutBaseUrl: () => string;
  onEvent: (event: StripeEvent) => void;
  /** Status a new refund starts in: `succeeded` at once (default), or `pending` until settled. */
  refundStatus?: NewRefundStatus;
}

export type NewRefundStatus = Extract<RefundStatus, 'succeeded' | 'pending'>;

/** The PaymentIntent fields a session holds until the buyer pays (Stripe creates the intent lazily). */
export interface PendingIntentData {
  metadata: Metadata;
  description: string | null;
  receiptEmail: string | null;
}

/** Account behaviour a test or developer may switch at run time (`POST /_emulator/settings`). */
export interface AccountSettings {
  refundStatus: NewRefundStatus;
}

/** Everything the account holds, as plain JSON, oldest first (the order lists are built from). */
export interface AccountSnapshot {
  sessions: CheckoutSession[];
  lineItems: Array<[string, LineItem[]]>;
  pendingIntentData: Array<[string, PendingIntentData]>;
  intents: PaymentIntent[];
  charges: Charge[];
  /** Absent from files written before the emulator kept PaymentMethods. */
  paymentMethods?: PaymentMethod[];
  refunds: Refund[];
  disputes: Dispute[];
  events: StripeEvent[];
  settings: AccountSettings;
}

/**
 * The objects of the emulated Stripe account and the events their changes produce. The rules for
 * each kind of object live in their own module (sessions, payments, refunds, disputes) over this state.
 */
export class Account {
  readonly sessions = new Map<string, CheckoutSession>();
  readonly openSessions = new Set<string>();
  readonly intents = new Map<string, PaymentIntent>();
  readonly charges = new Map<string, Charge>();
  readonly paymentMethods = new Map<string, PaymentMethod>();
  readonly refunds = new Map<string, Refund>();
  readonly disputes = new Map<string, Dispute>();
  /** Line items are only part of a session when expanded, as in Stripe. */
  readonly lineItems = new Map<string, LineItem[]>();
  /** payment_intent_data is held until the buyer pays: the PaymentIntent is created lazily, as Stripe does. */
  readonly pendingIntentData = new Map<string, PendingIntentData>();
  private events: StripeEvent[] = [];
  private readonly eventsById = new Map<string, StripeEvent>();
  settings: AccountSettings;

  constructor(readonly deps: StoreDeps) {
    this.settings = this.defaultSettings();
  }

  nowSeconds(): number {
    return Math.floor(this.deps.now() / 1000);
  }

  reset(): void {
    for (const map of [
      this.sessions,
      this.intents,
      this.charges,
      this.paymentMethods,
      this.refunds,
      this.disputes,
      this.lineItems,
      this.pendingIntentData,
      this.eventsById,
    ]) {
      map.clear();
    }
    this.openSessions.clear();
    this.events = [];
    this.settings = this.defaultSettings();
  }

  snapshot(): AccountSnapshot {
    return {
      sessions: [...this.sessions.values()],
      lineItems: [...this.lineItems.entries()],
      pendingIntentData: [...this.pendingIntentData.entries()],
      intents: [...this.intents.values()],
      charges: [...this.charges.values()],
      paymentMethods: [...this.paymentMethods.values()],
      refunds: [...this.refunds.values()],
      disputes: [...this.disputes.values()],
      events: this.events,
      settings: this.settings,
    };
  }

  /** Replaces the state with a snapshot (taken by `snapshot()`, possibly in an earlier process). */
  restore(snapshot: AccountSnapshot): void {
    this.reset();
    const byId = <T extends { id: string }>(map: Map<string, T>, items: T[] = []): void => {
      for (const item of items) map.set(item.id, item);
    };
    byId(this.sessions, snapshot.sessions);
    byId(this.intents, snapshot.intents);
    byId(this.charges, snapshot.charges);
    byId(this.paymentMethods, snapshot.paymentMethods);
    byId(this.refunds, snapshot.refunds);
    byId(this.disputes, snapshot.disputes);
    for (const [id, items] of snapshot.lineItems ?? []) this.lineItems.set(id, items);
    for (const [id, data] of snapshot.pendingIntentData ?? []) this.pendingIntentData.set(id, data);
    for (const session of this.sessions.values()) if (session.status === 'open') this.openSessions.add(session.id);
    this.events = [...(snapshot.events ?? [])];
    byId(this.eventsById, this.events);
    this.settings = { ...this.defaultSettings(), ...snapshot.settings };
  }

  // ---- Lookups shared by every kind of object --------------------------------------------------

  getPaymentIntent(id: string, param = 'id'): PaymentIntent {
    const intent = this.intents.get(id);
    if (!intent) throw resourceMissing('payment_intent', id, param);
    return intent;
  }

  getCharge(id: string, param = 'id'): Charge {
    const charge = this.charges.get(id);
    if (!charge) throw resourceMissing('charge', id, param);
    return charge;
  }

  getPaymentMethod(id: string, param = 'id'): PaymentMethod {
    const method = this.paymentMethods.get(id);
    if (!method) throw resourceMissing('payment_method', id, param);
    return method;
  }

  intentOf(session: CheckoutSession): PaymentIntent | undefined {
    return typeof session.payment_intent === 'string' ? this.intents.get(session.payment_intent) : undefined;
  }

  latestChargeOf(intent: PaymentIntent): Charge | undefined {
    return typeof intent.latest_charge === 'string' ? this.charges.get(intent.latest_charge) : undefined;
  }

  // ---- Events --------------------------------------------------------------------------------------

  getEvent(id: string): StripeEvent {
    const event = this.eventsById.get(id);
    if (!event) throw resourceMissing('event', id);
    return event;
  }

  /** Events oldest first. */
  listEvents(filter: { type?: string } = {}): StripeEvent[] {
    return this.events.filter((e) => filter.type === undefined || e.type === filter.type);
  }

  emit(type: EventType, object: StripeObject, request: RequestRef, previousAttributes?: Record<string, unknown>): void {
    const event: StripeEvent = {
      id: newId.event(),
      object: 'event',
      api_version: this.deps.apiVersion,
      created: this.nowSeconds(),
      // A snapshot: later changes to the object must not rewrite what this event said.
      data: {
        object: structuredClone(object),
        ...(previousAttributes ? { previous_attributes: structuredClone(previousAttributes) } : {}),
      },
      livemode: false,
      pending_webhooks: 1,
      request: { id: request.id, idempotency_key: request.idempotencyKey },
      type,
    };
    this.events.push(event);
    this.eventsById.set(event.id, event);
    this.deps.onEvent(event);
  }

  private defaultSettings(): AccountSettings {
    return { refundStatus: this.deps.refundStatus ?? 'succeeded' };
  }
}
