import http from 'node:http';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import client from 'prom-client';
import { metricOptions } from '../vocabulary/metrics';
import { makeTelemetryFilterString, Runtime } from '@temporalio/worker';
import { temporalLogger, type Logger } from '../config/log';
import { listening } from '../config/listen';

// The worker's telemetry: the Temporal runtime logs through this process's pino logger (the SDK's
// own lines, the workflows' `log`, the activities' `Context.current().log`, and the native core's
// warnings, forwarded), and exports its metrics (task slots, poll and schedule-to-start latencies,
// workflow and activity outcomes: `temporal_*`) in Prometheus format on a loopback port of its own.
// The worker's HTTP server serves /healthz and /metrics: Node's process metrics, the worker's own,
// and the SDK's text fetched from that port, so one scrape target has all of them.

/** A free loopback port for the SDK's exporter (it binds the address itself and cannot report an ephemeral one). */
async function freeLoopbackPort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve, reject) => server.once('error', reject).listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/**
 * Installs the Temporal runtime (once per process, before any NativeConnection): logs through
 * `logger`, metrics on a loopback port. Returns the URL of the SDK's metrics.
 */
export async function installRuntime(logger: Logger): Promise<string> {
  const address = `127.0.0.1:${await freeLoopbackPort()}`;
  const verbose = logger.isLevelEnabled('debug');
  Runtime.install({
    logger: temporalLogger(logger.child({ component: 'temporal' })),
    telemetryOptions: {
      logging: { forward: {}, filter: makeTelemetryFilterString({ core: verbose ? 'DEBUG' : 'WARN', other: 'ERROR' }) },
      // Prefix and units as the SDK's defaults, which Temporal's own SDK dashboards expect.
      metrics: { prometheus: { bindAddress: address } },
    },
  });
  return `http://${address}/metrics`;
}

/** The worker's own counters, made before anything that counts starts (the Stripe steps count their calls). */
export interface WorkerMetrics {
  registry: client.Registry;
  sweptHolds: client.Counter;
  /** Every call to Stripe by endpoint and outcome (`ok`, `rate_limited`, `refused`, `failed`). */
  stripeRequests: client.Counter<'endpoint' | 'outcome'>;
  /** STRIPE_MAX_REQUESTS_PER_SECOND as this worker sets it on the Stripe queue (alerts compare the calls with it). */
  stripeBudget: client.Gauge;
  /** Stray refunds refused: a signed event that Stripe's session or our records did not bear out. */
  strayRefundsRefused: client.Counter;
  /** Checkout Sessions opened for purchases, when they open (whatever the buyer was answered: 201 or 202). */
  sessionsOpened: client.Counter;
  /** From a purchase placed to its session open, the checkout line's wait included. */
  checkoutSeconds: client.Histogram;
}

export function createWorkerMetrics(): WorkerMetrics {
  const registry = new client.Registry();
  client.collectDefaultMetrics({ register: registry });
  return {
    registry,
    sweptHolds: new client.Counter({
      ...metricOptions('flashsale_sweeper_returned_holds_total'),
      registers: [registry],
    }),
    stripeRequests: new client.Counter({
      ...metricOptions('flashsale_stripe_requests_total'),
      registers: [registry],
    }),
    stripeBudget: new client.Gauge({
      ...metricOptions('flashsale_stripe_budget_requests_per_second'),
      registers: [registry],
    }),
    // Without labels, exported at 0 from the start: the first refusal is an increase an alert sees.
    strayRefundsRefused: new client.Counter({
      ...metricOptions('flashsale_stray_refunds_refused_total'),
      registers: [registry],
    }),
    sessionsOpened: new client.Counter({
      ...metricOptions('flashsale_sessions_opened_total'),
      registers: [registry],
    }),
    // Up to minutes: a buyer in the checkout line waits for the Stripe budget's turn (202, then the URL).
    checkoutSeconds: new client.Histogram({
      ...metricOptions('flashsale_purchase_checkout_seconds'),
      buckets: [0.025, 0.05, 0.1, 0.2, 0.4, 0.8, 1.6, 3.2, 6.4, 12.8, 25.6, 60, 120, 300],
      registers: [registry],
    }),
  };
}

export interface WorkerTelemetry extends WorkerMetrics {
  /** The address /healthz and /metrics are served on (the real port when 0 was asked for). */
  url: string;
  close(): Promise<void>;
}

/** How long Temporal may take to answer the health check, and how long its answer stands. */
const TEMPORAL_CHECK_MS = 1_500;
const TEMPORAL_CHECK_EVERY_MS = 2_000;

/**
 * Whether Temporal answers this worker's connection: one check at a time, its answer reused for
 * TEMPORAL_CHECK_EVERY_MS (probes and scrapes of many pods ask often). A hung server (the frontend
 * stopped, a network that drops packets) leaves the worker's state RUNNING and its pollers counted:
 * only a call that must be answered tells.
 */
function temporalProbe(check: (deadlineMs: number) => Promise<unknown>): () => Promise<boolean> {
  let last: { ok: boolean; at: number } | undefined;
  let running: Promise<boolean> | undefined;
  return () => {
    if (last && Date.now() - last.at < TEMPORAL_CHECK_EVERY_MS) return Promise.resolve(last.ok);
    running ??= check(TEMPORAL_CHECK_MS)
      .then(
        () => true,
        () => false,
      )
      .then((ok) => {
        last = { ok, at: Date.now() };
        running = undefined;
        return ok;
      });
    return running;
  };
}

/**
 * The worker's HTTP server: `GET /healthz` (200 while the worker polls and Temporal answers its
 * connection; 503 once it stopped or failed, or while Temporal does not answer), `GET /livez` (200
 * unless the worker stopped or failed: a Temporal outage is not cured by a restart) and `GET /metrics`.
 */
export async function serveTelemetry(opts: {
  port: number;
  host: string;
  sdkMetricsUrl: string;
  /** The Temporal worker's state (`RUNNING`, `STOPPING`, `FAILED`, …). */
  state: () => string;
  /** Asks Temporal something it must answer within `deadlineMs` (rejects otherwise); without it /healthz does not ask. */
  temporalCheck?: (deadlineMs: number) => Promise<unknown>;
  logger: Logger;
  /** The counters to serve (createWorkerMetrics); new ones by default. */
  metrics?: WorkerMetrics;
}): Promise<WorkerTelemetry> {
  const metrics = opts.metrics ?? createWorkerMetrics();
  const { registry } = metrics;
  const temporalReachable = opts.temporalCheck && temporalProbe(opts.temporalCheck);
  const sdkMetrics = async (): Promise<string> => {
    try {
      const res = await fetch(opts.sdkMetricsUrl, { signal: AbortSignal.timeout(2_000) });
      return res.ok ? await res.text() : '';
    } catch (err) {
      opts.logger.warn({ err }, 'the Temporal SDK metrics could not be read');
      return '';
    }
  };
  const server = http.createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.writeHead(405, { Allow: 'GET, HEAD' }).end();
    } else if (path === '/healthz' || path === '/livez') {
      const state = opts.state();
      const polling = state === 'RUNNING' || state === 'INITIALIZED';
      const answer = (temporal?: boolean) => {
        const up = polling && temporal !== false;
        res.writeHead(up ? 200 : 503, { 'content-type': 'application/json' });
        const reach = temporal === undefined ? {} : { temporal: temporal ? 'ok' : 'unreachable' };
        res.end(JSON.stringify({ status: up ? 'ok' : 'down', worker: state, ...reach }));
      };
      if (path === '/livez' || !temporalReachable || !polling) answer();
      else void temporalReachable().then(answer);
    } else if (path === '/metrics') {
      Promise.all([registry.metrics(), sdkMetrics()]).then(
        ([own, sdk]) => {
          res.writeHead(200, { 'content-type': registry.contentType });
          res.end(`${own}\n${sdk}`);
        },
        (err: unknown) => {
          opts.logger.error({ err }, 'metrics failed');
          res.writeHead(500).end();
        },
      );
    } else {
      res.writeHead(404, { 'content-type': 'application/json' }).end(JSON.stringify({ status: 404 }));
    }
  });
  server.listen(opts.port, opts.host);
  await listening(server, {
    port: opts.port,
    host: opts.host,
    portVar: 'WORKER_METRICS_PORT',
    hostVar: 'WORKER_METRICS_HOST',
  });
  const { port } = server.address() as AddressInfo;
  return {
    ...metrics,
    url: `http://${opts.host.includes(':') ? `[${opts.host}]` : opts.host}:${port}`,
    close: () =>
      new Promise((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
