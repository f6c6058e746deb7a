import type { Client } from '@temporalio/client';
import type pg from 'pg';
import { createNotificationActivities, type DeliveryOutcome } from '../../activities/notifications';
import { loadNotifyConfig } from '../../config/notify';
import { configuredChannels } from '../../worker/notification-channels';
import { createNotifier } from '../../worker/notifier';

// What a worker delivers buyer notifications with (worker/main.ts builds the same), for a test's
// worker: test/helpers/notifications.ts (a notifications worker alone) and test/helpers/system.ts.

/** NOTIFY_* for tests: retries in tens of milliseconds. */
export const FAST_RETRIES = { NOTIFY_RETRY_BASE_MS: '40', NOTIFY_RETRY_MAX_MS: '100', NOTIFY_TIMEOUT_MS: '2000' };

/** The parts a worker delivers notifications with, for `env`'s channels; outcomes and log lines recorded. */
export function notificationParts(
  db: pg.Pool,
  client: Client,
  taskQueue: string,
  env: Record<string, string>,
  onOutcome?: (channel: string, outcome: DeliveryOutcome) => void,
) {
  const outcomes: string[] = [];
  const lines: string[] = [];
  const config = loadNotifyConfig({ ...FAST_RETRIES, ...env });
  const channels = configuredChannels(config, (l) => lines.push(l));
  const notifier = createNotifier(
    client,
    taskQueue,
    channels.map((c) => c.name),
  );
  const activities = createNotificationActivities({
    db,
    channels,
    policy: config,
    onOutcome: (channel, outcome) => {
      outcomes.push(`${channel}:${outcome}`);
      onOutcome?.(channel, outcome);
    },
    log: (l) => lines.push(l),
  });
  return { notifier, activities, outcomes, lines };
}
