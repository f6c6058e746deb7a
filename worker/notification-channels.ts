import { createHmac } from 'node:crypto';
import nodemailer from 'nodemailer';
import type { NotifyConfig } from '../config/notify';
import { PermanentFailure, type Channel } from '../activities/notifications';
import type { NotificationMessage } from '../store/notifications';

// The channels a buyer notification goes by (each delivered apart, by its own workflow:
// workflows/notification.ts): the merchant's webhook, email, the log. A channel resolves when
// delivered (or when it has nothing to deliver to), throws when it failed and a retry may succeed,
// and throws a PermanentFailure when retrying the same message would be refused again (the delivery
// is dead at once).

/** The body the merchant's webhook receives (`type` names the event, for receivers that get others). */
export type NotificationPayload = { type: 'buyer.notification' } & Omit<NotificationMessage, 'attempts' | 'channel'>;

/** The id a delivery carries: the same on every attempt of a notification. */
export const notificationId = (m: Pick<NotificationMessage, 'id'>): string => `ntf_${m.id}`;

/**
 * The Standard Webhooks signature (standardwebhooks.com): HMAC-SHA256 of `<id>.<timestamp>.<body>`,
 * base64, as `v1,<signature>`. A `whsec_` secret is the base64 of the key (the standard's form);
 * any other secret is used as its UTF-8 bytes.
 */
export function signDelivery(secret: string, id: string, timestamp: number, body: string): string {
  const key = secret.startsWith('whsec_') ? Buffer.from(secret.slice(6), 'base64') : Buffer.from(secret, 'utf8');
  return `v1,${createHmac('sha256', key).update(`${id}.${timestamp}.${body}`).digest('base64')}`;
}

/**
 * What to tell the operator at start when the webhook's secret is not in the Standard Webhooks form
 * (`whsec_<base64 key>`): it signs with the secret's UTF-8 bytes, where the standard's libraries
 * base64-decode any secret they are given, so a receiver using one must be given the `whsec_` form
 * of the same key (the same signatures).
 */
export function webhookSecretWarning(config: NotifyConfig): string | undefined {
  if (!config.webhook || config.webhook.secret.startsWith('whsec_')) return undefined;
  return (
    'NOTIFY_WEBHOOK_SECRET has no whsec_ prefix: deliveries are signed with its UTF-8 bytes, and a receiver ' +
    'verifying with a Standard Webhooks library needs it as whsec_ followed by their base64 (printf %s "$NOTIFY_WEBHOOK_SECRET" | base64), ' +
    'which signs the same; setting that form here changes nothing for receivers'
  );
}

/**
 * A webhook answer that retrying will not change: a redirect (3xx: a signed delivery goes only to
 * NOTIFY_WEBHOOK_URL, never on to another address) and any 4xx but 408 (Request Timeout) and 429
 * (Too Many Requests), which say "later". 5xx, 408, 429 and network errors are retried.
 */
export const isPermanentHttpStatus = (status: number): boolean =>
  (status >= 300 && status < 400) || (status >= 400 && status < 500 && status !== 408 && status !== 429);

/**
 * An SMTP reply that retrying will not change (RFC 5321: 5yz is a permanent negative completion,
 * 4yz transient), but 503 (bad sequence of commands: the session's state, not the message).
 */
export const isPermanentSmtpCode = (code: number | undefined): boolean =>
  code !== undefined && code >= 500 && code < 600 && code !== 503;

function webhookChannel(cfg: NonNullable<NotifyConfig['webhook']>, timeoutMs: number): Channel {
  return {
    name: 'webhook',
    async send(m) {
      const id = notificationId(m);
      const payload: NotificationPayload = {
        type: 'buyer.notification',
        id,
        purchaseId: m.purchaseId,
        buyerId: m.buyerId,
        kind: m.kind,
        message: m.message,
        createdAt: m.createdAt,
      };
      const body = JSON.stringify(payload);
      const timestamp = Math.floor(Date.now() / 1000);
      const res = await fetch(cfg.url, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'webhook-id': id,
          'webhook-timestamp': String(timestamp),
          'webhook-signature': signDelivery(cfg.secret, id, timestamp, body),
          // The same id for the receivers that dedupe on the usual header.
          'idempotency-key': id,
        },
        body,
        signal: AbortSignal.timeout(timeoutMs),
        // A redirect is answered as it came (not followed, not a network error): see isPermanentHttpStatus.
        redirect: 'manual',
      });
      // Drain the answer so the connection is reused; only the status matters.
      await res.arrayBuffer().catch(() => undefined);
      if (res.ok) return 'delivered';
      const location = res.headers.get('location');
      const why =
        res.status >= 300 && res.status < 400
          ? `the webhook answered ${res.status}, a redirect${location ? ` to ${location}` : ''}: deliveries are not redirected, set NOTIFY_WEBHOOK_URL to the address it names`
          : `the webhook answered ${res.status}`;
      throw isPermanentHttpStatus(res.status) ? new PermanentFailure(why) : new Error(why);
    },
  };
}

/** What the email channel takes for an address: one `@`, a dot in the domain, no spaces. */
const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;

/**
 * Email to buyers whose id is their address (the merchant's login decides ids): an id without `@`
 * is not meant as one and is skipped; one with `@` that is not an address is dead at once.
 */
function emailChannel(cfg: NonNullable<NotifyConfig['email']>, timeoutMs: number, log: (l: string) => void): Channel {
  const transport = nodemailer.createTransport({
    url: cfg.smtpUrl,
    connectionTimeout: timeoutMs,
    greetingTimeout: timeoutMs,
    socketTimeout: timeoutMs,
  });
  return {
    name: 'email',
    async send(m) {
      if (!m.buyerId.includes('@')) {
        log(`notification ${notificationId(m)} not emailed: buyer id ${m.buyerId} is not an email address`);
        return 'skipped';
      }
      if (!EMAIL.test(m.buyerId)) throw new PermanentFailure(`malformed email address: ${m.buyerId}`);
      try {
        await transport.sendMail({
          from: cfg.from,
          to: m.buyerId,
          subject: `About your order ${m.purchaseId}`,
          text: `${m.message}\n\nOrder ${m.purchaseId}`,
          // SMTP servers that dedupe see the same Message-ID on a retry.
          messageId: `<${notificationId(m)}.${m.purchaseId}@flash-sale-checkout>`,
          // The whole send, not each phase, ends at the deadline: an attempt Temporal has timed out
          // does not go on sending beside its retry (a server that delays every reply).
          signal: AbortSignal.timeout(timeoutMs),
        });
      } catch (err) {
        const code = (err as { responseCode?: number }).responseCode;
        if (isPermanentSmtpCode(code)) throw new PermanentFailure(`SMTP refused (${code}): ${(err as Error).message}`);
        throw err;
      }
      return 'delivered';
    },
  };
}

function logChannel(log: (l: string) => void): Channel {
  return {
    name: 'log',
    async send(m) {
      log(`notification for buyer ${m.buyerId} (purchase ${m.purchaseId}, ${m.kind}): ${m.message}`);
      return 'delivered';
    },
  };
}

/** The names of the channels `config` sets, in delivery order. */
export function configuredChannelNames(config: NotifyConfig): string[] {
  return [config.webhook && 'webhook', config.email && 'email', config.log && 'log'].filter((n) => !!n) as string[];
}

/** The channels `config` sets, in delivery order. */
export function configuredChannels(config: NotifyConfig, log: (line: string) => void): Channel[] {
  const make: Record<string, () => Channel> = {
    webhook: () => webhookChannel(config.webhook!, config.timeoutMs),
    email: () => emailChannel(config.email!, config.timeoutMs, log),
    log: () => logChannel(log),
  };
  return configuredChannelNames(config).map((name) => make[name]());
}
