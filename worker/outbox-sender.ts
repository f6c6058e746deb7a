import { createHmac } from 'node:crypto';
import nodemailer from 'nodemailer';
import type { NotifyConfig } from '../config/notify';
import type { Db } from '../store/db';
import { claimDue, markFailed, markSent, type OutboxMessage } from '../store/outbox';

// Drains the buyer notifications outbox: the saga writes a row ("Your payment was refunded. Sold out
// before the payment arrived."), this loop delivers it to the merchant's webhook (who knows how to
// reach the buyer), by email where the merchant has SMTP, or to the log in development. Each row is
// claimed for a lease (store/outbox.ts: FOR UPDATE SKIP LOCKED, so every worker runs a sender and
// none delivers a row another holds), sent, then marked sent, or retried with exponential backoff.
// At least once: a receiver that answered but whose answer was lost gets the row again, with the
// same `Webhook-Id`, and drops the repeat.

/** How many rows one claim takes. */
const BATCH = 20;
/** A claim lasts the delivery's deadline and this much more: no other sender takes the row meanwhile. */
const LEASE_MARGIN_MS = 20_000;

/** The body the merchant's webhook receives (`type` names the event, for receivers that get others). */
export type NotificationPayload = { type: 'buyer.notification' } & Omit<OutboxMessage, 'attempts'>;

/** The id a delivery carries: the same on every attempt of a row. */
export const notificationId = (m: Pick<OutboxMessage, 'id'>): string => `ntf_${m.id}`;

/**
 * The Standard Webhooks signature (standardwebhooks.com): HMAC-SHA256 of `<id>.<timestamp>.<body>`,
 * base64, as `v1,<signature>`. A `whsec_` secret is the base64 of the key (the standard's form);
 * any other secret is used as its UTF-8 bytes.
 */
export function signDelivery(secret: string, id: string, timestamp: number, body: string): string {
  const key = secret.startsWith('whsec_') ? Buffer.from(secret.slice(6), 'base64') : Buffer.from(secret, 'utf8');
  return `v1,${createHmac('sha256', key).update(`${id}.${timestamp}.${body}`).digest('base64')}`;
}

/** The wait before attempt `attempts + 1`: base, 2x base, 4x base, ... up to max, with up to 20% jitter. */
export function backoffMs(attempts: number, baseMs: number, maxMs: number, random = Math.random): number {
  const exp = Math.min(maxMs, baseMs * 2 ** Math.max(0, attempts - 1));
  return Math.round(exp * (1 - 0.2 * random()));
}

type Channel = { name: string; send(m: OutboxMessage): Promise<void> };

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
        redirect: 'error',
      });
      // Drain the answer so the connection is reused; only the status matters.
      await res.arrayBuffer().catch(() => undefined);
      if (!res.ok) throw new Error(`the webhook answered ${res.status}`);
    },
  };
}

/** Email to buyers whose id is their address (the merchant's login decides ids); others are skipped. */
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
      if (!/^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(m.buyerId)) {
        log(`outbox: ${notificationId(m)} not emailed: buyer id ${m.buyerId} is not an email address`);
        return;
      }
      await transport.sendMail({
        from: cfg.from,
        to: m.buyerId,
        subject: `About your order ${m.purchaseId}`,
        text: `${m.message}\n\nOrder ${m.purchaseId}`,
        // SMTP servers that dedupe see the same Message-ID on a retry.
        messageId: `<${notificationId(m)}.${m.purchaseId}@flash-sale-checkout>`,
      });
    },
  };
}

function logChannel(log: (l: string) => void): Channel {
  return {
    name: 'log',
    async send(m) {
      log(`notification for buyer ${m.buyerId} (purchase ${m.purchaseId}, ${m.kind}): ${m.message}`);
    },
  };
}

export interface OutboxSender {
  /** Stops claiming; resolves once the deliveries in flight are done and recorded. */
  stop(): Promise<void>;
}

/**
 * Starts the loop: claims due rows, delivers each through every configured channel, records the
 * outcome. With no channel it does not start (the rows wait) and says so.
 */
export function startOutboxSender(db: Db, config: NotifyConfig, log: (line: string) => void): OutboxSender {
  const channels: Channel[] = [];
  if (config.webhook) channels.push(webhookChannel(config.webhook, config.timeoutMs));
  if (config.email) channels.push(emailChannel(config.email, config.timeoutMs, log));
  if (config.log) channels.push(logChannel(log));
  if (channels.length === 0) {
    log('outbox: no NOTIFY_WEBHOOK_URL or SMTP_URL: buyer notifications wait in the notifications table, undelivered');
    return { stop: async () => {} };
  }
  log(`outbox: delivering buyer notifications by ${channels.map((c) => c.name).join(', ')}`);
  let stopping = false;
  let wake: (() => void) | undefined;
  const pause = (ms: number) =>
    new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, ms);
      wake = () => {
        clearTimeout(timer);
        resolve();
      };
    });

  const deliver = async (m: OutboxMessage): Promise<void> => {
    try {
      for (const channel of channels) await channel.send(m);
      await markSent(db, m.id);
    } catch (err) {
      const wait = backoffMs(m.attempts, config.retryBaseMs, config.retryMaxMs);
      const why = (err as Error).message;
      log(
        `outbox: ${notificationId(m)} (purchase ${m.purchaseId}) attempt ${m.attempts} failed: ${why}; next in ${wait} ms`,
      );
      await markFailed(db, m.id, why, wait, m.attempts);
    }
  };

  const loop = async (): Promise<void> => {
    while (!stopping) {
      let claimed: OutboxMessage[] = [];
      try {
        // The lease covers the whole batch delivered one after another, every channel at its deadline:
        // a row's lease must not lapse (and another sender claim it) while this one is still on it.
        claimed = await claimDue(db, {
          limit: BATCH,
          leaseMs: BATCH * channels.length * config.timeoutMs + LEASE_MARGIN_MS,
        });
        // One row at a time in claim order; a failing row does not hold the others back.
        for (const m of claimed)
          await deliver(m).catch((err: Error) => log(`outbox: recording ${m.id}: ${err.message}`));
      } catch (err) {
        log(`outbox: ${(err as Error).message}`);
      }
      // A full batch means more may be due: claim again at once.
      if (!stopping && claimed.length < BATCH) await pause(config.pollMs);
    }
  };
  const running = loop();
  return {
    async stop() {
      stopping = true;
      wake?.();
      await running;
    },
  };
}
