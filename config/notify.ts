import { ConfigError } from './index';

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

type Env = Record<string, string | undefined>;

export function loadNotifyConfig(env: Env): NotifyConfig {
  const problems: string[] = [];
  const int = (name: string, dflt: number, min: number): number => {
    const raw = env[name];
    if (raw === undefined || raw === '') return dflt;
    const n = Number(raw);
    if (!Number.isInteger(n) || n < min) problems.push(`${name} must be an integer >= ${min}, got "${raw}"`);
    return n;
  };
  const url = env.NOTIFY_WEBHOOK_URL || undefined;
  const secret = env.NOTIFY_WEBHOOK_SECRET || undefined;
  if (url && !/^https?:\/\/[^/\s]+/.test(url)) problems.push(`NOTIFY_WEBHOOK_URL must be an http(s) URL, got "${url}"`);
  if (url && !secret)
    problems.push('NOTIFY_WEBHOOK_SECRET is required with NOTIFY_WEBHOOK_URL (it signs each delivery)');
  if (secret && secret.length < MIN_NOTIFY_SECRET_LENGTH) {
    problems.push(`NOTIFY_WEBHOOK_SECRET must be at least ${MIN_NOTIFY_SECRET_LENGTH} characters`);
  }
  const smtpUrl = env.SMTP_URL || undefined;
  const from = env.NOTIFY_EMAIL_FROM || undefined;
  if (smtpUrl && !/^smtps?:\/\//.test(smtpUrl))
    problems.push(`SMTP_URL must be smtp:// or smtps://, got a "${smtpUrl.split(':')[0]}:" URL`);
  if (smtpUrl && !from) problems.push('NOTIFY_EMAIL_FROM is required with SMTP_URL (the sender address)');
  const config: NotifyConfig = {
    webhook: url && secret ? { url, secret } : undefined,
    email: smtpUrl && from ? { smtpUrl, from } : undefined,
    log: env.NOTIFY_LOG === '1',
    pollMs: int('NOTIFY_POLL_MS', 1_000, 10),
    retryBaseMs: int('NOTIFY_RETRY_BASE_MS', 5_000, 1),
    retryMaxMs: int('NOTIFY_RETRY_MAX_MS', 3_600_000, 1),
    timeoutMs: int('NOTIFY_TIMEOUT_MS', 10_000, 100),
    maxAttempts: int('NOTIFY_MAX_ATTEMPTS', 20, 1),
    maxAgeMs: int('NOTIFY_MAX_AGE_MS', 259_200_000, 0),
  };
  if (problems.length) throw new ConfigError(`invalid configuration:\n  - ${problems.join('\n  - ')}`);
  return config;
}
