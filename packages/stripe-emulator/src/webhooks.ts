import { createHmac } from 'node:crypto';
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';

import type { StripeEvent } from './objects';

/** `Stripe-Signature` as Stripe sends it: `t=<unix seconds>,v1=<hex HMAC-SHA256 of "t.payload">`. */
export function signWebhookPayload(payload: string, secret: string, timestamp: number): string {
  const signature = createHmac('sha256', secret).update(`${timestamp}.${payload}`, 'utf8').digest('hex');
  return `t=${timestamp},v1=${signature}`;
}

export interface WebhookSettings {
  /** Each event is delivered this many times, as independent deliveries. */
  duplicate: number;
  /** New deliveries start after a random delay and join the queue at a random place. */
  shuffle: boolean;
  /** Deliveries are held back; resuming releases them (in random order when shuffling). */
  paused: boolean;
  /**
   * Deliveries in flight at once. 1 (the default) sends them one at a time in queue order, so pausing
   * and shuffling are observable; Stripe itself sends in parallel and in no set order, which a load
   * test wants (one slow answer then holds back only its own delivery).
   */
  parallel: number;
}

export type DeliveryState = 'pending' | 'in_flight' | 'retrying' | 'delivered' | 'failed';

export interface DeliveryAttempt {
  at: string;
  status: number | null;
  error: string | null;
  duration_ms: number;
}

export interface DeliveryView {
  copy: number;
  state: DeliveryState;
  attempts: DeliveryAttempt[];
  next_attempt_at: string | null;
}

/** A delivery as the state file keeps it; the payload is re-made from the event. */
export interface DeliverySnapshot {
  event_id: string;
  copy: number;
  state: DeliveryState;
  attempts: DeliveryAttempt[];
  next_attempt_at: number | null;
}

interface Delivery {
  event: StripeEvent;
  copy: number;
  payload: string;
  state: DeliveryState;
  attempts: DeliveryAttempt[];
  nextAttemptAt: number | null;
}

export interface DispatcherOptions {
  url: string | null;
  secret: string;
  retryBaseMs: number;
  maxAttempts: number;
  timeoutMs: number;
  log: (line: string) => void;
  /** Called whenever a delivery changes state (for the state file). */
  onChange?: () => void;
}

const DEFAULT_SETTINGS: WebhookSettings = { duplicate: 1, shuffle: false, paused: false, parallel: 1 };
/** The most deliveries in flight at once that `parallel` may ask for. */
export const MAX_PARALLEL_DELIVERIES = 64;
/** Backoff doubles from retryBaseMs up to this multiple of it. */
const MAX_BACKOFF_FACTOR = 32;

/**
 * At-least-once webhook delivery. Deliveries go out in queue order, `parallel` at a time (one by
 * default, so pausing and shuffling are observable), each attempt signed afresh; a non-2xx answer, a network error or a
 * timeout schedules a retry with exponential backoff until `maxAttempts` is reached.
 */
export class WebhookDispatcher {
  private settings: WebhookSettings = { ...DEFAULT_SETTINGS };
  private deliveries = new Map<string, Delivery[]>();
  private queue: Delivery[] = [];
  private timers = new Set<NodeJS.Timeout>();
  /** How to abort each attempt in flight. */
  private readonly inFlight = new Set<() => void>();
  private closed = false;
  /** Bumped by reset and close so attempts that finish afterwards are ignored. */
  private generation = 0;

  constructor(private readonly options: DispatcherOptions) {}

  get url(): string | null {
    return this.options.url;
  }

  setUrl(url: string): void {
    this.options.url = url;
    this.pump();
  }

  configure(changes: Partial<WebhookSettings>): WebhookSettings {
    const wasPaused = this.settings.paused;
    this.settings = { ...this.settings, ...changes };
    if (wasPaused && !this.settings.paused && this.settings.shuffle) shuffleInPlace(this.queue);
    this.pump();
    return this.describeSettings();
  }

  describeSettings(): WebhookSettings & {
    url: string | null;
    queued: number;
    in_flight: boolean;
    in_flight_count: number;
  } {
    const inFlight = this.inFlight.size;
    return {
      ...this.settings,
      url: this.options.url,
      queued: this.queue.length,
      in_flight: inFlight > 0,
      in_flight_count: inFlight,
    };
  }

  enqueue(event: StripeEvent): void {
    if (this.closed) return;
    const payload = JSON.stringify(event, null, 2);
    const copies: Delivery[] = Array.from({ length: this.settings.duplicate }, (_, index) => ({
      event,
      copy: index + 1,
      payload,
      state: 'pending',
      attempts: [],
      nextAttemptAt: null,
    }));
    this.deliveries.set(event.id, copies);
    for (const delivery of copies) {
      if (this.settings.shuffle) this.later(delivery, Math.random() * this.options.retryBaseMs);
      else this.ready(delivery);
    }
  }

  describe(eventId: string): DeliveryView[] {
    return (this.deliveries.get(eventId) ?? []).map((d) => ({
      copy: d.copy,
      state: d.state,
      attempts: d.attempts.map((a) => ({ ...a })),
      next_attempt_at: d.nextAttemptAt === null ? null : new Date(d.nextAttemptAt).toISOString(),
    }));
  }

  /** Every delivery, in the order they were queued. */
  snapshot(): DeliverySnapshot[] {
    const out: DeliverySnapshot[] = [];
    for (const copies of this.deliveries.values()) {
      for (const d of copies) {
        out.push({
          event_id: d.event.id,
          copy: d.copy,
          state: d.state,
          attempts: d.attempts,
          next_attempt_at: d.nextAttemptAt,
        });
      }
    }
    return out;
  }

  /**
   * Takes back the deliveries of an earlier process. Those not finished resume: one that was in flight
   * when the process stopped is sent again (at least once), a retry keeps its time.
   */
  restore(snapshot: DeliverySnapshot[], eventOf: (id: string) => StripeEvent | undefined): void {
    for (const item of snapshot) {
      const event = eventOf(item.event_id);
      if (!event) continue;
      const delivery: Delivery = {
        event,
        copy: item.copy,
        payload: JSON.stringify(event, null, 2),
        state: item.state === 'in_flight' ? 'pending' : item.state,
        attempts: item.attempts ?? [],
        nextAttemptAt: null,
      };
      const copies = this.deliveries.get(event.id) ?? [];
      copies.push(delivery);
      this.deliveries.set(event.id, copies);
      if (delivery.state === 'pending') {
        this.ready(delivery);
      } else if (delivery.state === 'retrying') {
        this.later(delivery, Math.max(0, (item.next_attempt_at ?? 0) - Date.now()));
      }
    }
  }

  /** Forgets every delivery and restores the default settings; the URL stays. */
  reset(): void {
    this.stopEverything();
    this.deliveries.clear();
    this.settings = { ...DEFAULT_SETTINGS };
  }

  close(): void {
    this.closed = true;
    this.stopEverything();
  }

  private stopEverything(): void {
    this.generation += 1;
    for (const timer of this.timers) clearTimeout(timer);
    this.timers.clear();
    this.queue = [];
    for (const cancel of this.inFlight) cancel();
    this.inFlight.clear();
  }

  private ready(delivery: Delivery): void {
    delivery.nextAttemptAt = null;
    if (this.settings.shuffle) this.queue.splice(Math.floor(Math.random() * (this.queue.length + 1)), 0, delivery);
    else this.queue.push(delivery);
    this.pump();
  }

  private later(delivery: Delivery, delayMs: number): void {
    delivery.nextAttemptAt = Date.now() + delayMs;
    const timer = setTimeout(() => {
      this.timers.delete(timer);
      this.ready(delivery);
    }, delayMs);
    this.timers.add(timer);
  }

  private pump(): void {
    while (!this.closed && !this.settings.paused && this.options.url && this.inFlight.size < this.settings.parallel) {
      const delivery = this.queue.shift();
      if (!delivery) return;
      void this.attempt(delivery, this.options.url);
    }
  }

  private async attempt(delivery: Delivery, url: string): Promise<void> {
    const generation = this.generation;
    delivery.state = 'in_flight';
    const startedAt = Date.now();
    let cancel = (): void => {};
    const sent = this.send(delivery.payload, url, (abort) => (cancel = abort));
    this.inFlight.add(cancel);
    const result = await sent;
    if (generation !== this.generation) return;
    this.inFlight.delete(cancel);
    delivery.attempts.push({
      at: new Date(startedAt).toISOString(),
      status: 'status' in result ? result.status : null,
      error: 'error' in result ? result.error : null,
      duration_ms: Date.now() - startedAt,
    });
    const attempt = delivery.attempts.length;
    const label = `webhook ${delivery.event.id} ${delivery.event.type} copy ${delivery.copy} attempt ${attempt}`;
    if ('status' in result && result.status >= 200 && result.status < 300) {
      delivery.state = 'delivered';
      this.options.log(`${label} -> ${result.status}`);
    } else if (attempt >= this.options.maxAttempts) {
      delivery.state = 'failed';
      this.options.log(`${label} -> ${describeResult(result)}; giving up`);
    } else {
      const delay = this.options.retryBaseMs * Math.min(2 ** (attempt - 1), MAX_BACKOFF_FACTOR);
      delivery.state = 'retrying';
      this.options.log(`${label} -> ${describeResult(result)}; retrying in ${Math.round(delay)} ms`);
      this.later(delivery, delay);
    }
    this.options.onChange?.();
    this.pump();
  }

  /** One attempt; `onAbort` receives how to abort it. */
  private send(
    payload: string,
    url: string,
    onAbort: (abort: () => void) => void,
  ): Promise<{ status: number } | { error: string }> {
    return new Promise((resolve) => {
      let target: URL;
      try {
        target = new URL(url);
      } catch {
        resolve({ error: `invalid webhook URL ${url}` });
        return;
      }
      const headers = {
        'Content-Type': 'application/json; charset=utf-8',
        'Content-Length': Buffer.byteLength(payload),
        'User-Agent': 'Stripe/1.0 (+https://stripe.com/docs/webhooks)',
        'Cache-Control': 'no-cache',
        Accept: '*/*; q=0.5, application/xml',
        // Signed at each attempt, as Stripe does, so a redelivery is not refused as too old.
        'Stripe-Signature': signWebhookPayload(payload, this.options.secret, Math.floor(Date.now() / 1000)),
      };
      const send = target.protocol === 'https:' ? httpsRequest : httpRequest;
      const req = send(target, { method: 'POST', headers, agent: false, timeout: this.options.timeoutMs }, (res) => {
        res.resume();
        resolve({ status: res.statusCode ?? 0 });
      });
      req.on('timeout', () => req.destroy(new Error(`no response within ${this.options.timeoutMs} ms`)));
      req.on('error', (error) => resolve({ error: error.message || String(error) }));
      onAbort(() => req.destroy(new Error('emulator stopped')));
      req.end(payload);
    });
  }
}

function describeResult(result: { status: number } | { error: string }): string {
  return 'status' in result ? String(result.status) : result.error;
}

function shuffleInPlace<T>(items: T[]): void {
  for (let i = items.length - 1; i > 0; i -= 1) {
    const j = Math.floor(Math.random() * (i + 1));
    [items[i], items[j]] = [items[j], items[i]];
  }
}
