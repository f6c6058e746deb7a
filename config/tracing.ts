import type { IncomingMessage } from 'node:http';
import type { Resource } from '@opentelemetry/resources';
import type { SpanProcessor } from '@opentelemetry/sdk-trace-base';
import type { WorkflowClientInterceptor } from '@temporalio/client';

// OpenTelemetry tracing of the API and the worker, off unless the standard OTEL_* variables ask for
// it (see `tracingWanted`). On, spans go to an OTLP/HTTP collector (JSON over HTTP, POST /v1/traces):
// the API's HTTP server spans and Koa's middleware and route, Postgres queries (pg), outgoing HTTP
// (Stripe through node:http, the notification webhooks through fetch), and, through the Temporal
// interceptors (@temporalio/interceptors-opentelemetry), the client's calls, the workflows' and the
// activities' spans, with the trace context carried in Temporal headers. The exporter itself reads
// OTEL_EXPORTER_OTLP_* (endpoint, headers, timeout); the resource, OTEL_SERVICE_NAME and
// OTEL_RESOURCE_ATTRIBUTES. `startTracing` runs before pg and http are loaded (api/tracing.ts and
// worker/tracing.ts, each its entry point's first import), or their calls would not be traced.

export type Env = Record<string, string | undefined>;

/** The service names when OTEL_SERVICE_NAME is not set. */
export const DEFAULT_SERVICE_NAMES = { api: 'flash-sale-api', worker: 'flash-sale-worker' } as const;

/**
 * Whether tracing is on: never with OTEL_SDK_DISABLED=true or OTEL_TRACES_EXPORTER=none; on with
 * OTEL_TRACES_EXPORTER=otlp, or, that one unset, with an OTLP endpoint (OTEL_EXPORTER_OTLP_ENDPOINT
 * or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT). Any other exporter is refused: OTLP is the only one here,
 * over HTTP with JSON (another OTEL_EXPORTER_OTLP_[TRACES_]PROTOCOL is refused too).
 */
export function tracingWanted(env: Env): boolean {
  if (env.OTEL_SDK_DISABLED?.trim().toLowerCase() === 'true') return false;
  const exporters = (env.OTEL_TRACES_EXPORTER ?? '')
    .split(',')
    .map((e) => e.trim().toLowerCase())
    .filter(Boolean);
  if (exporters.length === 0) {
    const on = Boolean(env.OTEL_EXPORTER_OTLP_ENDPOINT || env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT);
    if (on) checkOtlpProtocol(env);
    return on;
  }
  if (exporters.includes('none')) return false;
  const other = exporters.filter((e) => e !== 'otlp');
  if (other.length > 0) {
    throw new Error(`OTEL_TRACES_EXPORTER: only otlp (or none) is supported, got "${env.OTEL_TRACES_EXPORTER}"`);
  }
  checkOtlpProtocol(env);
  return true;
}

/** The one OTLP transport this service's exporter speaks. */
const OTLP_PROTOCOL = 'http/json';

/**
 * Refuses an OTLP protocol other than http/json (OTEL_EXPORTER_OTLP_TRACES_PROTOCOL, else
 * OTEL_EXPORTER_OTLP_PROTOCOL): the exporter would post JSON to a collector expecting gRPC or protobuf.
 */
function checkOtlpProtocol(env: Env): void {
  const name = env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL?.trim()
    ? 'OTEL_EXPORTER_OTLP_TRACES_PROTOCOL'
    : 'OTEL_EXPORTER_OTLP_PROTOCOL';
  const protocol = env[name]?.trim().toLowerCase();
  if (protocol && protocol !== OTLP_PROTOCOL)
    throw new Error(`${name}: only ${OTLP_PROTOCOL} is supported, got "${env[name]}"`);
}

/** OTEL_SERVICE_NAME, or this process's default. */
export function serviceName(env: Env, which: keyof typeof DEFAULT_SERVICE_NAMES): string {
  return env.OTEL_SERVICE_NAME?.trim() || DEFAULT_SERVICE_NAMES[which];
}

/** What a started tracer provider gives the Temporal worker (its workflow spans are exported through it). */
export interface Tracing {
  readonly serviceName: string;
  readonly resource: Resource;
  readonly spanProcessor: SpanProcessor;
  /** Exports what is pending, then stops: at the end of the process. Never rejects, and gives up after SHUTDOWN_MS. */
  shutdown(): Promise<void>;
}

/**
 * The OpenTelemetry SDK, its exporter and instrumentations (about 310 modules, a fifth of a
 * second to load), loaded only when tracing is on: a process without it, a test process among
 * them, never pays for them.
 */
export function tracingSdk(): typeof import('./tracing-sdk') {
  // eslint-disable-next-line @typescript-eslint/no-require-imports -- loaded on demand, synchronously: tracing starts before http and pg load
  return require('./tracing-sdk') as typeof import('./tracing-sdk');
}

let started: Tracing | undefined;

/** The tracing this process started, if it is on. */
export function activeTracing(): Tracing | undefined {
  return started;
}

/** Probes and scrapes are not traced: they would outnumber the purchases. */
const UNTRACED_PATHS = new Set(['/healthz', '/readyz', '/metrics']);

function untraced(req: IncomingMessage): boolean {
  return UNTRACED_PATHS.has((req.url ?? '').split('?')[0]);
}

/**
 * The Temporal client's interceptors (the API's, and the worker's that starts notification
 * deliveries): with tracing on, each call is a span whose context goes on in the workflow's headers.
 */
export function temporalClientInterceptors(): { workflow: WorkflowClientInterceptor[] } {
  return { workflow: activeTracing() ? [tracingSdk().workflowClientInterceptor()] : [] };
}

/**
 * Starts tracing when the environment asks for it (`tracingWanted`), once per process, and returns
 * it; undefined when it is off, and then nothing is registered: no provider, no exporter, no
 * instrumentation.
 */
export function startTracing(which: keyof typeof DEFAULT_SERVICE_NAMES, env: Env = process.env): Tracing | undefined {
  if (started || !tracingWanted(env)) return started;
  const name = serviceName(env, which);
  const { resource, spanProcessor, shutdown } = tracingSdk().startProvider(name, untraced);
  started = { serviceName: name, resource, spanProcessor, shutdown };
  return started;
}

/**
 * The preload of an entry point: starts tracing if asked, or ends the process with one line on
 * stderr when the OTEL_* variables are wrong (as a bad setting does).
 */
export function startTracingOrExit(which: keyof typeof DEFAULT_SERVICE_NAMES): void {
  try {
    startTracing(which);
  } catch (err) {
    process.stderr.write(`invalid configuration:\n  - ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  }
}
