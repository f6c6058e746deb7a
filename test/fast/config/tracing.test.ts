import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { context, trace, TraceFlags } from '@opentelemetry/api';
import test from 'ava';
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { traceFields } from '../../../config/log';
import {
  activeTracing,
  DEFAULT_SERVICE_NAMES,
  serviceName,
  startTracing,
  tracingWanted,
  type Tracing,
} from '../../../config/tracing';
import { tracingActivityInterceptors, workflowSpanSinks } from '../../../worker/tracing';

// Tracing (config/tracing.ts) is off unless the standard OTEL_* variables ask for it; on, the
// process has a recording tracer named after it and log lines get the span's ids. (A purchase's
// whole trace, across the real processes: test/api/tracing.test.ts.) Serial: the provider is global.

const ENDPOINT = { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:1' };

test.serial(
  'off without OTEL_* variables, or with them saying so; on with an endpoint or OTEL_TRACES_EXPORTER=otlp',
  (t) => {
    t.false(tracingWanted({}));
    t.false(tracingWanted({ OTEL_SERVICE_NAME: 'checkout' }), 'a name alone does not turn it on');
    t.true(tracingWanted(ENDPOINT));
    t.true(tracingWanted({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://collector:4318/v1/traces' }));
    t.true(tracingWanted({ OTEL_TRACES_EXPORTER: 'otlp' }));
    t.false(tracingWanted({ ...ENDPOINT, OTEL_TRACES_EXPORTER: 'none' }));
    t.false(tracingWanted({ ...ENDPOINT, OTEL_SDK_DISABLED: 'true' }));
    t.true(tracingWanted({ ...ENDPOINT, OTEL_SDK_DISABLED: 'false' }));
    t.throws(() => tracingWanted({ OTEL_TRACES_EXPORTER: 'zipkin' }), { message: /only otlp \(or none\).*"zipkin"/ });
  },
);

test.serial('OTLP goes over HTTP with JSON: another protocol is refused by name, and only when tracing is on', (t) => {
  t.true(tracingWanted({ ...ENDPOINT, OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json' }));
  t.throws(() => tracingWanted({ ...ENDPOINT, OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' }), {
    message: 'OTEL_EXPORTER_OTLP_PROTOCOL: only http/json is supported, got "grpc"',
  });
  t.throws(
    () =>
      tracingWanted({
        OTEL_TRACES_EXPORTER: 'otlp',
        OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
        OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'http/protobuf',
      }),
    { message: /^OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: .*"http\/protobuf"/ },
  );
  // The traces' own setting wins over the general one.
  t.true(
    tracingWanted({
      ...ENDPOINT,
      OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc',
      OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'http/json',
    }),
  );
  // Tracing off: the protocol is not read at all.
  t.false(tracingWanted({ OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' }));
  t.false(tracingWanted({ ...ENDPOINT, OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc', OTEL_SDK_DISABLED: 'true' }));
});

test.serial('the service name defaults to flash-sale-api and flash-sale-worker; OTEL_SERVICE_NAME wins', (t) => {
  t.is(serviceName({}, 'api'), 'flash-sale-api');
  t.is(serviceName({}, 'worker'), 'flash-sale-worker');
  t.is(serviceName({ OTEL_SERVICE_NAME: 'checkout-eu' }, 'api'), 'checkout-eu');
  t.deepEqual(DEFAULT_SERVICE_NAMES, { api: 'flash-sale-api', worker: 'flash-sale-worker' });
});

test.serial(
  'off: nothing is started or loaded, no span records, log lines get no ids, the worker adds no interceptor and drops workflow spans',
  (t) => {
    t.is(startTracing('api', {}), undefined);
    t.is(activeTracing(), undefined);
    const span = trace.getTracer('test').startSpan('nothing');
    t.false(span.isRecording(), 'the API is a no-op: no provider was registered');
    context.with(trace.setSpan(context.active(), span), () => t.deepEqual(traceFields(), {}));
    span.end();
    t.deepEqual(tracingActivityInterceptors(), []);
    t.notThrows(() => workflowSpanSinks().exporter.export.fn({} as never, [workflowSpan()]));
    // Nor is the SDK loaded (config/tracing-sdk.ts): a process without tracing does not pay for it.
    const loaded = Object.keys(require.cache);
    t.false(
      loaded.some((f) => f.includes('tracing-sdk') || f.includes('@opentelemetry/sdk-trace-node')),
      'the OpenTelemetry SDK is not loaded',
    );
  },
);

test.serial(
  'on with an endpoint: a recording tracer named after the process, its spans posted there and on log lines',
  async (t) => {
    const posted: string[] = [];
    const collector = http.createServer((req, res) => {
      let body = '';
      req.on('data', (d: Buffer) => (body += d.toString()));
      req.on('end', () => {
        posted.push(`${req.method} ${req.url} ${body}`);
        res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      });
    });
    await new Promise<void>((resolve) => collector.listen(0, '127.0.0.1', resolve));
    // The exporter reads its endpoint from the environment, as it does in the services.
    process.env.OTEL_EXPORTER_OTLP_ENDPOINT = `http://127.0.0.1:${(collector.address() as AddressInfo).port}`;
    try {
      const tracing = startTracing('worker', process.env);
      t.truthy(tracing);
      t.is(activeTracing(), tracing);
      t.is(tracing!.serviceName, 'flash-sale-worker');
      t.is(tracing!.resource.attributes['service.name'], 'flash-sale-worker');
      t.is(startTracing('worker', process.env), tracing, 'once per process');
      t.is(tracingActivityInterceptors().length, 1);
      const span = trace.getTracer('test').startSpan('work');
      t.true(span.isRecording());
      context.with(trace.setSpan(context.active(), span), () =>
        t.deepEqual(traceFields(), { trace_id: span.spanContext().traceId, span_id: span.spanContext().spanId }),
      );
      span.end();
      t.deepEqual(traceFields(), {}, 'outside a span, nothing');
      await tracing!.shutdown();
      t.is(posted.length, 1);
      t.regex(posted[0], /^POST \/v1\/traces \{.*"flash-sale-worker".*"name":"work"/s);
      t.true(posted[0].includes(span.spanContext().traceId));
    } finally {
      delete process.env.OTEL_EXPORTER_OTLP_ENDPOINT;
      collector.close();
    }
  },
);

test.serial(
  "the workflow sandbox's spans are reshaped for the exporter: parent, scope, resource, the workflow's names",
  (t) => {
    const ended: ReadableSpan[] = [];
    const fake = {
      resource: { attributes: {} },
      spanProcessor: { onEnd: (s: ReadableSpan) => ended.push(s) },
    } as unknown as Tracing;
    const info = { workflowType: 'purchaseWorkflow', workflowId: 'purchase-1' } as never;
    void workflowSpanSinks(fake).exporter.export.fn(info, [workflowSpan('b'.repeat(16)), workflowSpan()]);
    const [child, root] = ended;
    t.deepEqual(child.parentSpanContext, {
      traceId: 'a'.repeat(32),
      spanId: 'b'.repeat(16),
      traceFlags: TraceFlags.SAMPLED,
    });
    t.is(root.parentSpanContext, undefined);
    t.is(child.spanContext().spanId, 'c'.repeat(16));
    t.is(child.spanContext().traceState?.get('vendor'), 'x');
    t.is(root.spanContext().traceState, undefined);
    t.is(child.instrumentationScope.name, '@temporalio/interceptors-opentelemetry');
    t.is(child.resource, fake.resource);
    t.like(child.attributes, {
      'temporal.workflow.type': 'purchaseWorkflow',
      'temporal.workflow.id': 'purchase-1',
      own: 1,
    });
  },
);

/** A span as the sandbox serialises it (OpenTelemetry 1's shape). */
function workflowSpan(parentSpanId?: string) {
  return {
    name: 'RunWorkflow:purchaseWorkflow',
    kind: 0,
    spanContext: {
      traceId: 'a'.repeat(32),
      spanId: 'c'.repeat(16),
      traceFlags: TraceFlags.SAMPLED,
      ...(parentSpanId ? { traceState: 'vendor=x' } : {}),
    },
    ...(parentSpanId ? { parentSpanId } : {}),
    startTime: [1, 0] as [number, number],
    endTime: [2, 0] as [number, number],
    status: { code: 0 },
    attributes: { own: 1 },
    links: [],
    events: [],
    duration: [1, 0] as [number, number],
    ended: true,
    droppedAttributesCount: 0,
    droppedLinksCount: 0,
    droppedEventsCount: 0,
    instrumentationLibrary: { name: '@temporalio/interceptors-opentelemetry' },
  };
}
