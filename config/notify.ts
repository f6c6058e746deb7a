import { ConfigError } from './index';
import { Reader, type Env } from './reader';

// Where the worker's outbox sender delivers buyer notifications (worker/outbox-sender.ts). Read by
// the worker beside its own configuration. Any of the channels may be set; none set means the
// notifications wait in the outbox (the worker says so at start), except with NOTIFY_LOG=1
// (`npm start`), which prints each one to the worker's log and counts it sent.

export interface NotifyConfig {
  webhook?: { url: string; secret: string };
  email?: { smtpUrl: string; from: string };
  /** Print each notification to the log (development) and count it delivered. */
  log: boolean;
  /** How often the sender looks for due rows when the last look found none. */
  pollMs: number;
  /** The first retry waits this long; each next one twice as long, up to `retryMaxMs`. */
  retryBaseMs: number;
  retryMaxMs: number;
  /** One delivery's deadline (the claim's lease is longer). */
  timeoutMs: number;
  /** A delivery that failed this many times on its channel is dead (not tried again until requeued). */
  maxAttempts: number;
  /** A delivery that fails when its notification is older than this is dead too; 0: no age limit. */
  maxAgeMs: number;
}

/** The shortest webhook secret accepted: the receiver's HMAC key. */
export const MIN_NOTIFY_SECRET_LENGTH = 32;

export function loadNotifyConfig(env: Env): NotifyConfig {
  const r = new Reader(env, 'worker');
  const url = r.raw('NOTIFY_WEBHOOK_URL');
  const secret = r.raw('NOTIFY_WEBHOOK_SECRET');
  if (url && !/^https?:\/\/[^/\s]+/.test(url))
    r.problems.push(`NOTIFY_WEBHOOK_URL must be an http(s) URL, got "${url}"`);
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
    pollMs: r.int('NOTIFY_POLL_MS'),
    retryBaseMs: r.int('NOTIFY_RETRY_BASE_MS'),
    retryMaxMs: r.int('NOTIFY_RETRY_MAX_MS'),
    timeoutMs: r.int('NOTIFY_TIMEOUT_MS'),
    maxAttempts: r.int('NOTIFY_MAX_ATTEMPTS'),
    maxAgeMs: r.int('NOTIFY_MAX_AGE_MS'),
  };
  // The worker's own loader has already refused development secrets beside a live key.
  if (r.problems.length) throw new ConfigError(`invalid configuration:\n  - ${r.problems.join('\n  - ')}`);
  return config;
}
