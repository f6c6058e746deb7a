import pino from 'pino';

// The emulator's log when it runs as a process (main.ts): one JSON object a line on stdout, in the
// same form as the flash-sale service's processes (levels as words, ISO times, errors under `err`),
// so one log pipeline, or `npm start`'s pretty-printer, reads them all.

export type Logger = pino.Logger;

const LEVELS = ['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'] as const;

/** The process's logger, at LOG_LEVEL (default `info`); a LOG_LEVEL that is not a level is refused. */
export function createLogger(service: string, env: NodeJS.ProcessEnv = process.env): Logger {
  const level = (env.LOG_LEVEL || 'info').toLowerCase();
  if (!(LEVELS as readonly string[]).includes(level)) {
    throw new Error(`invalid configuration:\n  - LOG_LEVEL must be one of ${LEVELS.join(', ')}, got "${level}"`);
  }
  return pino({
    level,
    base: { service, pid: process.pid },
    timestamp: pino.stdTimeFunctions.isoTime,
    formatters: { level: (label) => ({ level: label }) },
    serializers: { err: pino.stdSerializers.err, error: pino.stdSerializers.err },
  });
}

/**
 * How main ends on a failure: before the logger exists (a bad LOG_LEVEL) one plain message on
 * stderr; after, a `fatal` line. Then exit 1.
 */
export function exitOnFailure(logger: Logger | undefined, err: unknown): never {
  const message = err instanceof Error ? err.message : String(err);
  if (logger) logger.fatal({ err }, message);
  else process.stderr.write(`${message}\n`);
  process.exit(1);
}
