import type { IncomingMessage } from 'node:http';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { registerInstrumentations } from '@opentelemetry/instrumentation';
import { HttpInstrumentation } from '@opentelemetry/instrumentation-http';
import { KoaInstrumentation } from '@opentelemetry/instrumentation-koa';
import { PgInstrumentation } from '@opentelemetry/instrumentation-pg';
import { UndiciInstrumentation } from '@opentelemetry/instrumentation-undici';
import {
  detectResources,
  envDetector,
  processDetector,
  hostDetector,
  resourceFromAttributes,
} from '@opentelemetry/resources';
import { BatchSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { NodeTracerProvider } from '@opentelemetry/sdk-trace-node';
import { OpenTelemetryWorkflowClientInterceptor } from '@temporalio/interceptors-opentelemetry/lib/client';
import {
  OpenTelemetryActivityInboundInterceptor,
  OpenTelemetryActivityOutboundInterceptor,
} from '@temporalio/interceptors-opentelemetry/lib/worker';
import type { WorkflowClientInterceptor } from '@temporalio/client';
import type { ActivityInterceptors } from '@temporalio/worker';
import type { Context } from '@temporalio/activity';

// The OpenTelemetry SDK's side of config/tracing.ts, which loads this module only when tracing is on.

/** How long a stopping process waits for its last spans to be exported. */
const SHUTDOWN_MS = 2_000;

/**
 * Registers a tracer provider exporting to OTLP/HTTP, with the instrumentations of http, undici,
 * Koa and pg (requests for which `untraced` is true are not traced).
 */
export function startProvider(name: string, untraced: (req: IncomingMessage) => boolean) {
  const resource = detectResources({ detectors: [envDetector, processDetector, hostDetector] }).merge(
    resourceFromAttributes({ 'service.name': name }),
  );
  const spanProcessor = new BatchSpanProcessor(new OTLPTraceExporter());
  const provider = new NodeTracerProvider({ resource, spanProcessors: [spanProcessor] });
  // The AsyncLocalStorage context manager and the W3C trace-context and baggage propagators.
  provider.register();
  registerInstrumentations({
    tracerProvider: provider,
    instrumentations: [
      new HttpInstrumentation({ ignoreIncomingRequestHook: untraced }),
      new UndiciInstrumentation(),
      new KoaInstrumentation(),
      // Only queries of a traced request or activity: the clock's, the admitter's and the sweeper's
      // ticks would be a trace each, many a second.
      new PgInstrumentation({ requireParentSpan: true }),
    ],
  });
  // A collector that is gone at the end costs the last spans, not the process's exit or its time.
  const shutdown = () =>
    Promise.race([
      provider.shutdown().catch(() => undefined),
      new Promise<void>((resolve) => setTimeout(resolve, SHUTDOWN_MS).unref()),
    ]);
  return { resource, spanProcessor, shutdown };
}

/** The Temporal client interceptor that makes each call a span and carries its context in the headers. */
export function workflowClientInterceptor(): WorkflowClientInterceptor {
  return new OpenTelemetryWorkflowClientInterceptor();
}

/** A worker's activity interceptors: each attempt a span under the workflow span that scheduled it. */
export function activityInterceptors(ctx: Context): ActivityInterceptors {
  return {
    inbound: new OpenTelemetryActivityInboundInterceptor(ctx),
    outbound: new OpenTelemetryActivityOutboundInterceptor(ctx),
  };
}
