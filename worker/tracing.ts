import { TraceFlags, createTraceState } from '@opentelemetry/api';
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base';
import type { OpenTelemetrySinks, SerializableSpan } from '@temporalio/interceptors-opentelemetry/lib/workflow';
import type { ActivityInterceptorsFactory, InjectedSinks } from '@temporalio/worker';
import { activeTracing, tracingSdk, type Tracing } from '../config/tracing';

// The worker's side of tracing (config/tracing.ts): with it on, each activity attempt is a span
// (RunActivity:<type>) under the workflow's span that scheduled it, whose context came in the
// activity's Temporal header; and the workflows' spans (RunWorkflow, StartActivity, …), made inside
// the workflow sandbox by the interceptor module bundled with the workflows
// (workflowInterceptorModules in worker/create-worker.ts, bundled only for a worker that traces), come out through the `exporter` sink to this process's exporter.

/** The activity interceptors of tracing: none when it is off. */
export function tracingActivityInterceptors(tracing = activeTracing()): ActivityInterceptorsFactory[] {
  if (!tracing) return [];
  return [tracingSdk().activityInterceptors];
}

/**
 * The `exporter` sink the bundled workflow interceptors call with their ended spans. It is always
 * registered, since the bundle is the same with tracing on or off: off, the spans are dropped here.
 * The sandbox builds them with OpenTelemetry 1's span shape (`parentSpanId`,
 * `instrumentationLibrary`); the exporter reads version 2's (`parentSpanContext`,
 * `instrumentationScope`), so each is reshaped on the way.
 */
export function workflowSpanSinks(tracing = activeTracing()): InjectedSinks<OpenTelemetrySinks> {
  return {
    exporter: {
      export: {
        fn: (info, spans) => {
          if (!tracing) return;
          const attributes = { 'temporal.workflow.type': info.workflowType, 'temporal.workflow.id': info.workflowId };
          for (const span of spans) tracing.spanProcessor.onEnd(readable(span, attributes, tracing));
        },
      },
    },
  };
}

function readable(span: SerializableSpan, extra: Record<string, string>, tracing: Tracing): ReadableSpan {
  const { traceState, ...ids } = span.spanContext;
  const spanContext = { ...ids, ...(traceState ? { traceState: createTraceState(traceState) } : {}) };
  return {
    name: span.name,
    kind: span.kind,
    spanContext: () => spanContext,
    ...(span.parentSpanId
      ? {
          parentSpanContext: {
            traceId: ids.traceId,
            spanId: span.parentSpanId,
            traceFlags: ids.traceFlags ?? TraceFlags.SAMPLED,
          },
        }
      : {}),
    startTime: span.startTime,
    endTime: span.endTime,
    status: span.status,
    attributes: { ...span.attributes, ...extra },
    links: span.links,
    events: span.events,
    duration: span.duration,
    ended: span.ended,
    resource: tracing.resource,
    instrumentationScope: span.instrumentationLibrary ?? { name: '@temporalio/interceptors-opentelemetry' },
    droppedAttributesCount: span.droppedAttributesCount,
    droppedEventsCount: span.droppedEventsCount,
    droppedLinksCount: span.droppedLinksCount,
  };
}
