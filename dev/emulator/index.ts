import Koa from 'koa';
import { type Server, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import Stripe from 'stripe';

import { createStripeApi } from './api';
import { controlRoutes, problemDetails } from './control';
import { Problem } from './errors';
import { FaultInjector } from './faults';
import { IdempotencyStore } from './idempotency';
import { checkoutPageRoutes } from './page';
import { EmulatorStore } from './store';
import { WebhookDispatcher } from './webhooks';

export { signWebhookPayload } from './webhooks';

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
  log?: (line: string) => void;
}

export interface Emulator {
  /** http://127.0.0.1:PORT */
  url: string;
  port: number;
  setWebhookUrl(url: string): void;
  /** Stops the server, timers and pending deliveries. */
  close(): Promise<void>;
}

/**
 * Starts the payments emulator: the Stripe API subset under `/v1` (what stripe-node talks to), the hosted
 * checkout page under `/checkout`, and the `/_emulator` control routes. All state lives in memory.
 */
export async function startEmulator(opts: EmulatorOptions): Promise<Emulator> {
  if (!opts.webhookSecret) throw new Error('startEmulator: webhookSecret is required to sign webhooks.');
  const log = opts.log ?? (() => undefined);
  const host = opts.host ?? '127.0.0.1';
  let baseUrl = '';

  const webhooks = new WebhookDispatcher({
    url: opts.webhookUrl ?? null,
    secret: opts.webhookSecret,
    retryBaseMs: opts.retryBaseMs ?? 1000,
    maxAttempts: opts.maxDeliveryAttempts ?? 8,
    timeoutMs: opts.deliveryTimeoutMs ?? 10_000,
    log,
  });
  const store = new EmulatorStore({
    now: opts.now ?? Date.now,
    apiVersion: Stripe.API_VERSION,
    checkoutBaseUrl: () => (opts.publicUrl ?? baseUrl).replace(/\/$/, ''),
    onEvent: (event) => webhooks.enqueue(event),
  });
  const faults = new FaultInjector();
  const idempotency = new IdempotencyStore(opts.now ?? Date.now);
  const shutdown = new AbortController();

  const api = createStripeApi({
    store,
    faults,
    idempotency,
    apiVersion: Stripe.API_VERSION,
    signal: shutdown.signal,
    log,
  });
  const site = new Koa();
  site.use(problemDetails(log));
  site.use(controlRoutes({ store, faults, webhooks, idempotency, url: () => baseUrl }).routes());
  site.use(checkoutPageRoutes(store).routes());
  site.use((ctx) => {
    throw new Problem(404, 'not_found', `Nothing at ${ctx.method} ${ctx.path} on the payments emulator.`);
  });

  const apiHandler = api.callback();
  const siteHandler = site.callback();
  const server = createServer((req, res) => {
    const path = req.url ?? '/';
    const toApi = path === '/v1' || path.startsWith('/v1/') || path.startsWith('/v1?');
    void (toApi ? apiHandler : siteHandler)(req, res);
  });
  await listen(server, opts.port ?? 0, host);
  const port = (server.address() as AddressInfo).port;
  baseUrl = `http://${urlHost(host)}:${port}`;

  const sweeper = setInterval(() => store.expireDue(), opts.expirySweepMs ?? 1000);
  sweeper.unref();

  let closing: Promise<void> | null = null;
  return {
    url: baseUrl,
    port,
    setWebhookUrl: (url) => webhooks.setUrl(url),
    close: () => {
      closing ??= new Promise<void>((resolve) => {
        clearInterval(sweeper);
        shutdown.abort();
        webhooks.close();
        server.close(() => resolve());
        server.closeAllConnections();
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
