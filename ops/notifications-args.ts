import { NOTIFICATION_CHANNELS } from '../vocabulary';
import { UsageError } from './cli-args';

// `npm run support -- notifications list|retry`'s arguments (ops/notifications.ts runs them).

export type NotificationsArgs =
  | { command: 'notifications'; action: 'list'; channel?: string; json: boolean }
  | { command: 'notifications'; action: 'retry'; ids?: string[]; channel?: string };

/** `ntf_123` (as the webhook's `webhook-id` and the log name it) or `123`. */
function notificationRowId(raw: string): string {
  const m = /^(?:ntf_)?([1-9][0-9]{0,17})$/.exec(raw.trim());
  if (!m) throw new UsageError(`not a notification id: "${raw}" (ntf_<n> or <n>)`);
  return m[1];
}

export function parseNotifications(
  rest: string[],
  values: { channel?: string; all?: boolean; json?: boolean },
): NotificationsArgs {
  const [action, ...targets] = rest;
  const channel = values.channel?.trim() || undefined;
  if (channel !== undefined && !(NOTIFICATION_CHANNELS as readonly string[]).includes(channel))
    throw new UsageError(`--channel must be one of ${NOTIFICATION_CHANNELS.join(', ')}, got "${channel}"`);
  if (action === 'list') {
    if (targets.length) throw new UsageError(`unexpected arguments: ${targets.join(' ')}`);
    if (values.all) throw new UsageError('--all only applies to notifications retry');
    return { command: 'notifications', action, channel, json: !!values.json };
  }
  if (action === 'retry') {
    if (values.json) throw new UsageError('--json only applies to notifications list');
    if (values.all && targets.length) throw new UsageError('give notification ids or --all, not both');
    if (!values.all && !targets.length) throw new UsageError('notifications retry: give notification ids, or --all');
    return { command: 'notifications', action, channel, ids: values.all ? undefined : targets.map(notificationRowId) };
  }
  throw new UsageError(
    action ? `unknown notifications command: ${action}` : 'missing notifications command: list or retry',
  );
}
