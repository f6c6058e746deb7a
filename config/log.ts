import { isSpanContextValid, trace } from '@opentelemetry/api';
import pino from 'pino';
import type { Logger as TemporalLogger, LogLevel as TemporalLevel, LogMetadata } from '@temporalio/common';
import { ConfigError } from './index';
import { variable } from './variables';

// Structured logs of the long-running processes (API, worker, payments emulator): one JSON object
// a line on stdout, for a log pipeline to parse. `npm start` pretty-prints them (dev/start.ts);
// nothing in a service writes with console.*.

export type Logger = pino.Logger;

const LEVELS = ['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'] as const;
export type LogLevel = (typeof LEVELS)[number];

/** LOG_LEVEL (default `info`); a value that is not a level stops the process like any bad setting. */
export function logLevel(env: Record<string, string | undefined>): LogLevel {
  const raw = (env.LOG_LEVEL || String(variable('LOG_LEVEL').default)).toLowerCase();
  if (!(LEVELS as readonly string[]).includes(raw)) {
    throw new ConfigError(`invalid configuration:\n  - LOG_LEVEL must be one of ${LEVELS.join(', ')}, got "${raw}"`);
  }
  return raw as LogLevel;
}

/**
 * The logger of one process: `service` names it on every line; levels are written as words
 * (`"level":"info"`) and times as ISO 8601, which log pipelines read without a mapping. Errors are
 * serialised (type, message, stack) under `err` or `error`, the key Temporal's SDK uses. With
 * tracing on, a line logged inside a span carries its ids (`traceFields`). Lines go to standard
 * output synchronously unless `destination` says otherwise.
 */
export function createLogger(
  service: string,
  env: Record<string, string | undefined> = process.env,
  destination?: pino.DestinationStream,
): Logger {
  return pino(
    {
      level: logLevel(env),
      base: { service, pid: process.pid },
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: { level: (label) => ({ level: label }) },
      serializers: { err: pino.stdSerializers.err, error: pino.stdSerializers.err },
      mixin: traceFields,
    },
    // Written as they are logged, in order: pino's default (an asynchronous stream) let a process's
    // last lines come out of order when it exited while a write to a full pipe was pending (the API's
    // drain: "stopped" before "every request answered", a fresh-clone CI run, 2026-12-05).
    destination ?? blockingStdout(),
  );
}

/**
 * Standard output for synchronous writes, a pipe made blocking first. Node leaves a pipe on standard
 * output non-blocking, and pino's writer meets a full one with EAGAIN, then sleeps 100 ms before each
 * try, and the event loop with it: in a 10,000-buyer drill, whose APIs write to pipes the drill reads,
 * an API spent 8 s of the crowd's first minute asleep there (its CPU profile). A blocking write waits
 * only until the reader has taken some. (A file or a terminal is written as it is.)
 */
function blockingStdout(): pino.DestinationStream {
  const handle = (process.stdout as unknown as { _handle?: { setBlocking?: (blocking: boolean) => number } })._handle;
  handle?.setBlocking?.(true);
  return pino.destination({ dest: 1, sync: true });
}

/**
 * The ids of the span current where a line is logged (`trace_id`, `span_id`, as OpenTelemetry's
 * log correlation names them), so that a trace leads to its lines and back. With tracing off
 * (config/tracing.ts) no span is ever current and lines get nothing.
 */
export function traceFields(): { trace_id?: string; span_id?: string } {
  const ctx = trace.getActiveSpan()?.spanContext();
  return ctx && isSpanContextValid(ctx) ? { trace_id: ctx.traceId, span_id: ctx.spanId } : {};
}

/**
 * Temporal's Logger interface over pino, for `Runtime.install({ logger })`: the SDK's own lines,
 * the workflows' `log` and the activities' `Context.current().log` come out as this process's JSON,
 * with their metadata (workflowId, activityType, requestId, …) as fields.
 */
export function temporalLogger(logger: Logger): TemporalLogger {
  const write = (level: TemporalLevel, message: string, meta?: LogMetadata) => {
    const fields = meta ?? {};
    switch (level) {
      case 'TRACE':
        return logger.trace(fields, message);
      case 'DEBUG':
        return logger.debug(fields, message);
      case 'INFO':
        return logger.info(fields, message);
      case 'WARN':
        return logger.warn(fields, message);
      default:
        return logger.error(fields, message);
    }
  };
  return {
    log: write,
    trace: (m, meta) => write('TRACE', m, meta),
    debug: (m, meta) => write('DEBUG', m, meta),
    info: (m, meta) => write('INFO', m, meta),
    warn: (m, meta) => write('WARN', m, meta),
    error: (m, meta) => write('ERROR', m, meta),
  };
}

/**
 * How an entry point ends on a failure: a configuration error (before any logger may exist, or an
 * invalid LOG_LEVEL) is one plain message on stderr; anything else is a `fatal` line, then exit 1.
 */
export function exitOnFailure(logger: Logger | undefined, err: unknown): never {
  if (err instanceof ConfigError || !logger) {
    process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n`);
  } else {
    logger.fatal({ err }, err instanceof Error ? err.message : String(err));
  }
  process.exit(1);
}
