import type { ExecutionContext } from 'ava';
import fs from 'node:fs';
import {
  type IncomingHttpHeaders,
  type IncomingMessage,
  type Server,
  type ServerResponse,
  createServer,
} from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import Stripe from 'stripe';

import { type Emulator, type EmulatorOptions, startEmulator } from '../src/index';
import type { DeliveryView } from '../src/webhooks';

export const WEBHOOK_SECRET = 'whsec_emulator_test_secret';

export interface ReceivedWebhook {
  rawBody: string;
  signature: string;
  headers: IncomingHttpHeaders;
  /** What the receiver answered. */
  status: number;
  /** The event as `stripe.webhooks.constructEvent` verified it, or the verification error. */
  event: Stripe.Event | null;
  verifyError: string | null;
}

/** A tiny webhook endpoint that verifies each delivery the way the service's handler does. */
export class WebhookReceiver {
  readonly received: ReceivedWebhook[] = [];
  /** Decides the answer to the n-th request (0-based); 200 unless a test says otherwise. */
  answer: (index: number, rawBody: string) => number = () => 200;
  /** While set, requests wait for it before they are answered (they count in `waiting` meanwhile). */
  gate: Promise<void> | null = null;
  /** Requests read and not yet answered. */
  waiting = 0;
  url = '';
  private readonly server: Server = createServer((req, res) => this.handle(req, res));

  private constructor(private readonly verifier: Stripe) {}

  static async start(verifier: Stripe): Promise<WebhookReceiver> {
    const receiver = new WebhookReceiver(verifier);
    await new Promise<void>((resolve) => receiver.server.listen(0, '127.0.0.1', resolve));
    const { port } = receiver.server.address() as AddressInfo;
    receiver.url = `http://127.0.0.1:${port}/v1/webhooks/stripe`;
    return receiver;
  }

  private handle(req: IncomingMessage, res: ServerResponse): void {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      this.waiting += 1;
      void (this.gate ?? Promise.resolve()).then(() => {
        this.waiting -= 1;
        this.answerRequest(req, res, chunks);
      });
    });
  }

  private answerRequest(req: IncomingMessage, res: ServerResponse, chunks: Buffer[]): void {
    const rawBody = Buffer.concat(chunks).toString('utf8');
    const signature = String(req.headers['stripe-signature'] ?? '');
    let event: Stripe.Event | null = null;
    let verifyError: string | null = null;
    try {
      event = this.verifier.webhooks.constructEvent(rawBody, signature, WEBHOOK_SECRET);
    } catch (error) {
      verifyError = error instanceof Error ? error.message : String(error);
    }
    const status = this.answer(this.received.length, rawBody);
    this.received.push({ rawBody, signature, headers: req.headers, status, event, verifyError });
    res.statusCode = status;
    res.end(status < 300 ? '{"received":true}' : '{"error":"try again"}');
  }

  /** Verified events the receiver accepted (2xx), in arrival order. */
  accepted(type?: string): Stripe.Event[] {
    return this.received
      .filter((r) => r.status < 300 && r.event && (type === undefined || r.event.type === type))
      .map((r) => r.event as Stripe.Event);
  }

  close(): Promise<void> {
    return new Promise((resolve) => {
      this.server.close(() => resolve());
      this.server.closeAllConnections();
    });
  }
}

export interface Harness {
  emulator: Emulator;
  stripe: Stripe;
  receiver: WebhookReceiver;
  /** Calls an `/_emulator` control route with a JSON body. */
  control: <T = unknown>(method: string, path: string, body?: unknown) => Promise<{ status: number; body: T }>;
}

export interface ProblemBody {
  type: string;
  title: string;
  status: number;
  detail: string;
  code: string;
}

export interface EmulatorEvents {
  data: Array<{
    id: string;
    type: string;
    object_id: string;
    delivered: boolean;
    deliveries: DeliveryView[];
    event: Stripe.Event;
  }>;
}

/** For tests that make more calls a second than Stripe's sandbox allows, about something else than its limits. */
export const NO_RATE_LIMIT = { rateLimit: { accountPerSecond: 0, endpointPerSecond: 0 } };

/** A fresh emulator on a random port, a webhook receiver and a real stripe-node client; torn down after the test. */

export async function startHarness(
  t: ExecutionContext,
  options: Partial<EmulatorOptions> & { connectWebhooks?: boolean } = {},
): Promise<Harness> {
  const { connectWebhooks = true, ...emulatorOptions } = options;
  const verifier = new Stripe('sk_test_verifier');
  const receiver = await WebhookReceiver.start(verifier);
  const emulator = await startEmulator({
    port: 0,
    webhookSecret: WEBHOOK_SECRET,
    webhookUrl: connectWebhooks ? receiver.url : undefined,
    retryBaseMs: 50,
    ...emulatorOptions,
  });
  t.teardown(async () => {
    await emulator.close();
    await receiver.close();
  });
  const stripe = stripeFor(emulator);
  const control = async <T>(method: string, path: string, body?: unknown): Promise<{ status: number; body: T }> => {
    const res = await fetch(`${emulator.url}${path}`, {
      method,
      headers: body === undefined ? {} : { 'Content-Type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    return { status: res.status, body: (text ? JSON.parse(text) : null) as T };
  };
  return { emulator, stripe, receiver, control };
}

export function stripeFor(emulator: Emulator, apiKey = 'sk_test_emulator'): Stripe {
  return new Stripe(apiKey, { host: '127.0.0.1', port: emulator.port, protocol: 'http', maxNetworkRetries: 0 });
}

export function nowSeconds(): number {
  return Math.floor(Date.now() / 1000);
}

/** The session the service opens for a purchase: one item, 30 minutes plus a margin. */
export function sessionParams(
  overrides: Partial<Stripe.Checkout.SessionCreateParams> = {},
): Stripe.Checkout.SessionCreateParams {
  return {
    mode: 'payment',
    line_items: [
      { quantity: 2, price_data: { currency: 'usd', unit_amount: 1500, product_data: { name: 'Limited sneaker' } } },
    ],
    success_url: 'http://shop.test/purchases/p_1/done?session_id={CHECKOUT_SESSION_ID}',
    cancel_url: 'http://shop.test/purchases/p_1/cancelled',
    expires_at: nowSeconds() + 31 * 60,
    client_reference_id: 'p_1',
    metadata: { purchase_id: 'p_1' },
    payment_intent_data: { metadata: { purchase_id: 'p_1' } },
    ...overrides,
  };
}

/** Polls `probe` until it returns something other than undefined/false, or fails after the deadline. */
export async function waitFor<T>(
  what: string,
  probe: () => T | undefined | false | Promise<T | undefined | false>,
  timeoutMs = 5000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline) throw new Error(`Timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 15));
  }
}

/** Acts as the buyer through `POST /_emulator/sessions/:id/pay`. */
export async function pay(
  harness: Harness,
  sessionId: string,
  outcome: string,
  extra: Record<string, unknown> = {},
): Promise<{ status: number; session: Stripe.Checkout.Session; problem: ProblemBody }> {
  const { status, body } = await harness.control<Stripe.Checkout.Session & ProblemBody>(
    'POST',
    `/_emulator/sessions/${sessionId}/pay`,
    { outcome, ...extra },
  );
  return { status, session: body, problem: body };
}

/** A state file path in a fresh folder of its own, removed after the test. */
export function tempStateFile(t: ExecutionContext, name = 'stripe-emulator.json'): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'stripe-emulator-state-'));
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  return path.join(dir, name);
}

/** Waits until the receiver accepted `count` events, and answers their types in arrival order. */
export async function acceptedTypes(harness: Harness, count: number, timeoutMs = 5000): Promise<string[]> {
  return waitFor(
    `${count} accepted events`,
    () => {
      const types = harness.receiver.accepted().map((e) => e.type);
      return types.length >= count && types;
    },
    timeoutMs,
  );
}

/**
 * The emulator's record of its events once it holds `count` of them and has recorded the answer to every
 * attempt it sent. The receiver answering comes a moment before the emulator records the answer: a test
 * that reads the record (or stops the emulator) right after the receiver saw a delivery races it.
 */
export async function recordedEvents(harness: Harness, count: number): Promise<EmulatorEvents['data']> {
  return waitFor(`the emulator to record the answers to ${count} events`, async () => {
    const { data } = (await harness.control<EmulatorEvents>('GET', '/_emulator/events')).body;
    const answered = data.every(
      (e) => e.deliveries.length > 0 && e.deliveries.every((d) => d.state !== 'pending' && d.state !== 'in_flight'),
    );
    return data.length >= count && answered && data;
  });
}

/** The PaymentIntent of a session paid through the control route with `outcome` (default succeeded). */
export async function paidIntent(
  harness: Harness,
  outcome = 'succeeded',
  extra: Record<string, unknown> = {},
): Promise<string> {
  const session = await harness.stripe.checkout.sessions.create(sessionParams());
  const paid = await pay(harness, session.id, outcome, extra);
  if (paid.status !== 200)
    throw new Error(`paying ${session.id} answered ${paid.status}: ${JSON.stringify(paid.problem)}`);
  return paid.session.payment_intent as string;
}
