import type { NotifyConfig } from '../config/notify';
import type { Db } from '../store/db';
import { claimDue, markDead, markFailed, markSent, type OutboxMessage } from '../store/outbox';
import { configuredChannels, notificationId, PermanentFailure, type Sent } from './outbox-channels';

export { notificationId, signDelivery, type NotificationPayload } from './outbox-channels';

// Drains the buyer notifications outbox: the saga writes a row ("Your payment was refunded. Sold out
// before the payment arrived."), this loop delivers it to the merchant's webhook (who knows how to
// reach the buyer), by email where the merchant has SMTP, or to the log in development. Each channel
// is a delivery of its own (store/outbox.ts), claimed for a lease (FOR UPDATE SKIP LOCKED, so every
// worker runs a sender and none delivers a row another holds), sent, then marked sent, retried with
// exponential backoff, or dead: at once when the channel refused for good (a 4xx but 408/429, an SMTP
// 5xx, a malformed address), else after NOTIFY_MAX_ATTEMPTS attempts or past NOTIFY_MAX_AGE_MS. One
// channel's outcome never touches another's. At least once: a receiver that answered but whose
// answer was lost gets the notification again, with the same `Webhook-Id`, and drops the repeat.

/** How many deliveries one claim takes. */
const BATCH = 20;
/** A claim lasts the delivery's deadline and this much more: no other sender takes the row meanwhile. */
const LEASE_MARGIN_MS = 20_000;

/** The wait before attempt `attempts + 1`: base, 2x base, 4x base, ... up to max, with up to 20% jitter. */
export function backoffMs(attempts: number, baseMs: number, maxMs: number, random = Math.random): number {
  const exp = Math.min(maxMs, baseMs * 2 ** Math.max(0, attempts - 1));
  return Math.round(exp * (1 - 0.2 * random()));
}

/** What became of one delivery attempt (the `outcome` label of the deliveries counter). */
export type DeliveryOutcome = Sent | 'failed' | 'dead';

export interface OutboxSender {
  /** Stops claiming; resolves once the deliveries in flight are done and recorded. */
  stop(): Promise<void>;
}

/**
 * Starts the loop: claims due deliveries, sends each by its channel, records the outcome (and
 * tells `onOutcome`, the worker's counter). With no channel it does not start (the rows wait) and
 * says so.
 */
export function startOutboxSender(
  db: Db,
  config: NotifyConfig,
  log: (line: string) => void,
  onOutcome: (channel: string, outcome: DeliveryOutcome) => void = () => {},
): OutboxSender {
  const channels = new Map(configuredChannels(config, log).map((c) => [c.name, c]));
  const names = [...channels.keys()];
  if (channels.size === 0) {
    log('outbox: no NOTIFY_WEBHOOK_URL or SMTP_URL: buyer notifications wait in the notifications table, undelivered');
    return { stop: async () => {} };
  }
  log(`outbox: delivering buyer notifications by ${names.join(', ')}`);
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
    const about = `${notificationId(m)} (purchase ${m.purchaseId}) by ${m.channel}, attempt ${m.attempts}`;
    try {
      const sent = await channels.get(m.channel)!.send(m);
      await markSent(db, m);
      onOutcome(m.channel, sent);
    } catch (err) {
      const why = (err as Error).message;
      const permanent = err instanceof PermanentFailure;
      const outOfAttempts = m.attempts >= config.maxAttempts;
      const tooOld = config.maxAgeMs > 0 && Date.now() - Date.parse(m.createdAt) > config.maxAgeMs;
      if (permanent || outOfAttempts || tooOld) {
        const reason = permanent ? 'refused for good' : outOfAttempts ? 'out of attempts' : 'too old to retry';
        log(`outbox: ${about} failed: ${why}; dead (${reason}): npm run support -- notifications list`);
        await markDead(db, m, why);
        onOutcome(m.channel, 'dead');
        return;
      }
      const wait = backoffMs(m.attempts, config.retryBaseMs, config.retryMaxMs);
      log(`outbox: ${about} failed: ${why}; next in ${wait} ms`);
      await markFailed(db, m, why, wait);
      onOutcome(m.channel, 'failed');
    }
  };

  const loop = async (): Promise<void> => {
    while (!stopping) {
      let claimed: OutboxMessage[] = [];
      try {
        // The lease covers the whole batch delivered one after another, each at its deadline: a
        // delivery's lease must not lapse (and another sender claim it) while this one is still on it.
        claimed = await claimDue(db, {
          limit: BATCH,
          leaseMs: BATCH * config.timeoutMs + LEASE_MARGIN_MS,
          channels: names,
        });
        // One delivery at a time in claim order; a failing one does not hold the others back.
        for (const m of claimed)
          await deliver(m).catch((err: Error) => log(`outbox: recording ${m.id} (${m.channel}): ${err.message}`));
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
