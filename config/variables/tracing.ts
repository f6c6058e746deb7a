import type { Variable } from './types';

// OpenTelemetry tracing (config/tracing.ts): the standard OTEL_* variables that turn it on and name
// the service. The SDK reads more of them itself (OTEL_EXPORTER_OTLP_HEADERS, _TIMEOUT,
// OTEL_RESOURCE_ATTRIBUTES, OTEL_BSP_*, …; docs/observability.md#tracing), as every OpenTelemetry SDK does.

const SDK = 'read as the OpenTelemetry specification defines it, here and by the SDK itself';

export const TRACING_VARIABLES: readonly Variable[] = [
  {
    name: 'OTEL_EXPORTER_OTLP_ENDPOINT',
    section: 'service',
    readBy: ['api', 'worker'],
    defaultText: '— (tracing off)',
    doc: `The OTLP/HTTP collector the API and the worker send their spans to (\`/v1/traces\` is appended); setting it turns tracing on ([Tracing](docs/observability.md#tracing)); ${SDK}`,
  },
  {
    name: 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT',
    section: 'service',
    readBy: ['api', 'worker'],
    defaultText: '— (tracing off)',
    doc: `The full URL spans are posted to, in place of \`OTEL_EXPORTER_OTLP_ENDPOINT\`'s; setting it turns tracing on too; ${SDK}`,
  },
  {
    name: 'OTEL_TRACES_EXPORTER',
    section: 'service',
    readBy: ['api', 'worker'],
    defaultText: '— (on with an endpoint)',
    doc: '`otlp`: tracing on (to `http://localhost:4318` unless an endpoint is set); `none`: off, endpoint or not. No other exporter is offered: a process given one exits 1 naming it',
  },
  {
    name: 'OTEL_SDK_DISABLED',
    section: 'service',
    readBy: ['api', 'worker'],
    defaultText: '`false`',
    doc: '`true`: tracing off, whatever the other OTEL_* variables say',
  },
  {
    name: 'OTEL_EXPORTER_OTLP_PROTOCOL',
    section: 'service',
    readBy: ['api', 'worker'],
    defaultText: '`http/json`',
    doc: 'the OTLP transport: only `http/json` is offered (`OTEL_EXPORTER_OTLP_TRACES_PROTOCOL` alike); a process told `grpc` or `http/protobuf` exits 1 naming it, rather than send JSON to a collector that expects another encoding',
  },
  {
    name: 'OTEL_EXPORTER_OTLP_TRACES_PROTOCOL',
    section: 'service',
    readBy: ['api', 'worker'],
    defaultText: '`OTEL_EXPORTER_OTLP_PROTOCOL`',
    doc: `the protocol for traces alone, in place of \`OTEL_EXPORTER_OTLP_PROTOCOL\`; ${SDK}`,
  },
  {
    name: 'OTEL_SERVICE_NAME',
    section: 'service',
    readBy: ['api', 'worker'],
    defaultText: '`flash-sale-api` / `flash-sale-worker`',
    doc: `The \`service.name\` of the process's spans (with tracing on); ${SDK}`,
  },
];
