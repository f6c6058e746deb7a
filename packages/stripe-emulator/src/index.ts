import Koa from 'koa';
import { type Server, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import Stripe from 'stripe';

import { createStripeApi } from './api';
import { controlRoutes, problemDetails } from './control';
import { Problem } from './errors';
import { FaultInjector } from './faults';
import { RateLimiter, SANDBOX_RATE_LIMIT, type RateLimitSettings } from './rate-limit';
import { IdempotencyStore } from './idempotency';
import { checkoutPageRoutes } from './page';
import { StateWriter, readStateFile } from './persist';
import type { NewRefundStatus } from './state';
import { EmulatorStore } from './store';
import { WebhookDispatcher } from './webhooks';

export { signWebhookPayload } from './webhooks';
export { seededRandom } from './faults';
export { sessionIdOfCheckoutUrl } from './sessions';
export { parseRateLimit, type RateLimitSettings } from './rate-limit';
export type { PaymentMethodChoice } from './payment-methods';
export type { PayControlExtras } from './control-pay';

/**
 * The webhook signing secret `main.ts` uses when STRIPE_WEBHOOK_SECRET is unset. It is printed here
 * and in the README, so it protects nothing: for development only.
 */
export const DEFAULT_WEBHOOK_SECRET = 'whsec_emulator_local';

export interface EmulatorOptions {
  /** 0 picks a free port; main.ts defaults to 12111. */
  port?: number;
  /** Default 127.0.0.1. */
  host?: string;
  /** Where events are POSTed; may also be set later. Without one, events wait. */
  webhookUrl?: string;
  /** `whsec_...` secret the `Stripe-Signature` header is computed with. */
  webhookSecret: string;
  /** Webhook redelivery backoff base: retryBaseMs, x2, x4, ... capped at x32. Default 1000. */
  retryBaseMs?: number;
  /** Attempts per delivery before giving up. Default 8. */
  maxDeliveryAttempts?: number;
  /** How long one delivery attempt may take before it counts as failed. Default 10000. */
  deliveryTimeoutMs?: number;
  /** Milliseconds since the epoch; tests move it forward to make sessions lapse. Default Date.now. */
  now?: () => number;
  /** How often lapsed sessions are expired (they are also expired whenever they are read). Default 1000. */
  expirySweepMs?: number;
  /** Base of the hosted page URLs in `session.url`, when buyers reach the emulator by another address. */
  publicUrl?: string;
  /**
   * A JSON file the account is kept in (sessions, payment intents, charges, refunds, disputes, events,
   * idempotency records, webhook deliveries): loaded at start, rewritten shortly after each change and
   * on close. Unfinished deliveries resume. Without one, everything lives in memory.
   */
  stateFile?: string;
  /** How long after a change the state file is written (changes in between join it). Default 100. */
  stateWriteDelayMs?: number;
  /** Status of a new refund: `succeeded` at once (default) or `pending` until settled; see `/_emulator/settings`. */
  refundStatus?: NewRefundStatus;
  /**
   * Stripe's rate limits for the account and per endpoint (requests a second; 0: none). Default: the
   * sandbox's, 25 and 25 (`STRIPE_EMULATOR_RATE_LIMIT` in main.ts); `/_emulator/rate-limits` changes them.
   */
  rateLimit?: RateLimitSettings;
  /** The rate limiter's clock (default Date.now; not `now`): a test that stops it sees no refill. */
  rateLimitNow?: () => number;
  log?: (line: string) => void;
}

export interface Emulator {
  /** http://127.0.0.1:PORT */
  url: string;
  port: number;
  setWebhookUrl(url: string): void;
  /** The state file in use, if any. */
  stateFile: string | null;
  /** Stops the server, timers and pending deliveries, then writes the state file. */
  close(): Promise<void>;
}

/**
 * Starts the payments emulator: the Stripe API subset under `/v1` (what stripe-node talks to), the hosted
 * checkout page under `/checkout`, and the `/_emulator` control routes. State lives in memory and, with
 * `stateFile`, in that file across restarts.
 */
export async function startEmulator(opts: EmulatorOptions): Promise<Emulator> {
  if (!opts.webhookSecret) throw new Error('startEmulator: webhookSecret is required to sign webhooks.');
  const log = opts.log ?? (() => undefined);
  const host = opts.host ?? '127.0.0.1';
  let baseUrl = '';
  const stateFile = opts.stateFile ? path.resolve(opts.stateFile) : null;
  // Read before anything starts: a state file that cannot be used stops the emulator here.
  const saved = stateFile ? readStateFile(stateFile) : null;
  let writer: StateWriter | null = null;
  const changed = (): void => writer?.schedule();

  const webhooks = new WebhookDispatcher({
    url: opts.webhookUrl ?? null,
    secret: opts.webhookSecret,
    retryBaseMs: opts.retryBaseMs ?? 1000,
    maxAttempts: opts.maxDeliveryAttempts ?? 8,
    timeoutMs: opts.deliveryTimeoutMs ?? 10_000,
    log,
    onChange: changed,
  });
  const store = new EmulatorStore({
    now: opts.now ?? Date.now,
    apiVersion: Stripe.API_VERSION,
    checkoutBaseUrl: () => (opts.publicUrl ?? baseUrl).replace(/\/$/, ''),
    onEvent: (event) => {
      webhooks.enqueue(event);
      changed();
    },
    refundStatus: opts.refundStatus,
  });
  const faults = new FaultInjector();
  // Real time, not `now`: tests that move the account's clock forward do not refill the buckets.
  const limiter = new RateLimiter(opts.rateLimit ?? { ...SANDBOX_RATE_LIMIT }, opts.rateLimitNow);
  const idempotency = new IdempotencyStore(opts.now ?? Date.now);
  if (saved) {
    store.restore(saved.account);
    idempotency.restore(saved.idempotency);
    log(`state loaded from ${stateFile}: ${store.account.sessions.size} sessions, ${store.listEvents().length} events`);
  }
  if (stateFile) {
    writer = new StateWriter(
      stateFile,
      opts.stateWriteDelayMs ?? 100,
      () => ({ account: store.snapshot(), idempotency: idempotency.snapshot(), deliveries: webhooks.snapshot() }),
      log,
    );
  }
  const shutdown = new AbortController();

  const api = createStripeApi({
    store,
    faults,
    limiter,
    idempotency,
    apiVersion: Stripe.API_VERSION,
    signal: shutdown.signal,
    log,
  });
  const site = new Koa();
  site.use(problemDetails(log));
  site.use(controlRoutes({ store, faults, limiter, webhooks, idempotency, url: () => baseUrl }).routes());
  site.use(checkoutPageRoutes(store).routes());
  site.use((ctx) => {
    throw new Problem(404, 'not_found', `Nothing at ${ctx.method} ${ctx.path} on the payments emulator.`);
  });

  const apiHandler = api.callback();
  const siteHandler = site.callback();
  const server = createServer((req, res) => {
    const target = req.url ?? '/';
    const toApi = target === '/v1' || target.startsWith('/v1/') || target.startsWith('/v1?');
    // Reads change nothing worth a write (a session lapsing on read sends an event, which does).
    if (writer && req.method !== 'GET' && req.method !== 'HEAD') res.once('finish', changed);
    void (toApi ? apiHandler : siteHandler)(req, res);
  });
  await listen(server, opts.port ?? 0, host);
  const port = (server.address() as AddressInfo).port;
  baseUrl = `http://${urlHost(host)}:${port}`;
  if (saved) {
    // Sessions loaded from the state file send buyers to this emulator, wherever it listens now, and
    // the deliveries left unfinished resume (now that callbacks from the receiver can be answered).
    store.sessions.rebaseUrls();
    const events = new Map(store.listEvents().map((event) => [event.id, event]));
    webhooks.restore(saved.deliveries, (id) => events.get(id));
  }

  const sweeper = setInterval(() => store.expireDue(), opts.expirySweepMs ?? 1000);
  sweeper.unref();

  let closing: Promise<void> | null = null;
  return {
    url: baseUrl,
    port,
    setWebhookUrl: (url) => webhooks.setUrl(url),
    stateFile,
    close: () => {
      closing ??= new Promise<void>((resolve) => {
        clearInterval(sweeper);
        shutdown.abort();
        webhooks.close();
        server.close(() => resolve());
        server.closeAllConnections();
      }).then(async () => {
        // Deliveries cut short are saved as in flight, and sent again by the next emulator on this file.
        if (writer) {
          writer.schedule();
          await writer.flush();
        }
      });
      return closing;
    },
  };
}

function listen(server: Server, port: number, host: string): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
}

function urlHost(host: string): string {
  if (host === '0.0.0.0' || host === '') return '127.0.0.1';
  if (host === '::') return '[::1]';
  return host.includes(':') ? `[${host}]` : host;
}
