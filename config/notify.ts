import { ConfigError } from './index';
import { isHttpUrl, Reader, type Env } from './reader';

// How the worker delivers buyer notifications (workflows/notification.ts): by which channels, and
// with what retries. Read by the worker beside its own configuration. Any of the channels may be
// set; none set means the notifications wait in their table (the worker says so at start), except
// with NOTIFY_LOG=1 (`npm start`), which prints each one to the worker's log and counts it sent.

export interface NotifyConfig {
  webhook?: { url: string; secret: string };
  email?: { smtpUrl: string; from: string };
  /** Print each notification to the log (development) and count it delivered. */
  log: boolean;
  /** The first retry waits this long; each next one twice as long, up to `retryMaxMs`. */
  retryBaseMs: number;
  retryMaxMs: number;
  /** One delivery's deadline. */
  timeoutMs: number;
  /** A delivery that failed this many times on its channel is dead (not tried again until requeued). */
  maxAttempts: number;
  /** Retries end this long after a delivery's first attempt, and it is dead; 0: no age limit. */
  maxAgeMs: number;
}

/** The shortest webhook secret accepted: the receiver's HMAC key. */
export const MIN_NOTIFY_SECRET_LENGTH = 32;

export function loadNotifyConfig(env: Env): NotifyConfig {
  const r = new Reader(env, 'worker');
  const url = r.raw('NOTIFY_WEBHOOK_URL');
  const secret = r.raw('NOTIFY_WEBHOOK_SECRET');
  if (url && !isHttpUrl(url)) r.problems.push(`NOTIFY_WEBHOOK_URL must be an http(s) URL, got "${url}"`);
  if (url && !secret)
    r.problems.push('NOTIFY_WEBHOOK_SECRET is required with NOTIFY_WEBHOOK_URL (it signs each delivery)');
  if (secret && secret.length < MIN_NOTIFY_SECRET_LENGTH) {
    r.problems.push(`NOTIFY_WEBHOOK_SECRET must be at least ${MIN_NOTIFY_SECRET_LENGTH} characters`);
  }
  const smtpUrl = r.raw('SMTP_URL');
  const from = r.raw('NOTIFY_EMAIL_FROM');
  if (smtpUrl && !/^smtps?:\/\//.test(smtpUrl))
    r.problems.push(`SMTP_URL must be smtp:// or smtps://, got a "${smtpUrl.split(':')[0]}:" URL`);
  if (smtpUrl && !from) r.problems.push('NOTIFY_EMAIL_FROM is required with SMTP_URL (the sender address)');
  const config: NotifyConfig = {
    webhook: url && secret ? { url, secret } : undefined,
    email: smtpUrl && from ? { smtpUrl, from } : undefined,
    log: r.raw('NOTIFY_LOG') === '1',
    retryBaseMs: r.int('NOTIFY_RETRY_BASE_MS'),
    retryMaxMs: r.int('NOTIFY_RETRY_MAX_MS'),
    timeoutMs: r.int('NOTIFY_TIMEOUT_MS'),
    maxAttempts: r.int('NOTIFY_MAX_ATTEMPTS'),
    maxAgeMs: r.int('NOTIFY_MAX_AGE_MS'),
  };
  if (config.retryMaxMs < config.retryBaseMs) {
    // Temporal refuses a retry policy whose longest wait is shorter than its first.
    r.problems.push(
      `NOTIFY_RETRY_MAX_MS (${config.retryMaxMs}) must be at least NOTIFY_RETRY_BASE_MS (${config.retryBaseMs})`,
    );
  }
  // The worker's own loader has already refused development secrets beside a live key.
  if (r.problems.length) throw new ConfigError(`invalid configuration:\n  - ${r.problems.join('\n  - ')}`);
  return config;
}
