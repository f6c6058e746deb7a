import type { Client } from '@temporalio/client';

// Reading a workflow's description for operators: its pending activities with their attempts and
// last failure, Temporal's timestamps, durations as people write them, and bounded fan-out.

export interface PendingActivity {
  activityType: string;
  activityId: string;
  attempt: number;
  /** 0 means unlimited. */
  maximumAttempts: number;
  lastFailure?: string;
  lastAttemptAt?: string;
  nextAttemptAt?: string;
}

type RawPendingActivity = NonNullable<
  Awaited<ReturnType<ReturnType<Client['workflow']['getHandle']>['describe']>>['raw']['pendingActivities']
>[number];
type RawTimestamp = RawPendingActivity['scheduledTime'];

export function toPendingActivity(p: RawPendingActivity): PendingActivity {
  return {
    activityType: p.activityType?.name ?? 'unknown',
    activityId: p.activityId ?? '',
    attempt: p.attempt ?? 0,
    maximumAttempts: p.maximumAttempts ?? 0,
    lastFailure: failureMessage(p.lastFailure),
    lastAttemptAt: tsToDate(p.lastAttemptCompleteTime)?.toISOString(),
    nextAttemptAt: tsToDate(p.nextAttemptScheduleTime)?.toISOString(),
  };
}

/**
 * The failure's message with its causes, innermost last, each prefixed by its error type when the
 * message does not already name it (`StripeConnectionError: ...` says more than the bare message).
 */
export function failureMessage(f: RawPendingActivity['lastFailure']): string | undefined {
  const parts: string[] = [];
  for (let cur = f; cur && parts.length < 5; cur = cur.cause) {
    if (!cur.message) continue;
    const type = cur.applicationFailureInfo?.type;
    const text = type && !cur.message.includes(type) ? `${type}: ${cur.message}` : cur.message;
    if (!parts.includes(text)) parts.push(text);
  }
  return parts.length ? parts.join(': ') : undefined;
}

export function describeActivity(a: PendingActivity): string {
  const of = a.maximumAttempts > 0 ? ` of ${a.maximumAttempts}` : '';
  return `activity ${a.activityType} failing: attempt ${a.attempt}${of}, last failure: ${a.lastFailure ?? 'none recorded (timed out?)'}`;
}

export function tsToDate(ts: RawTimestamp): Date | undefined {
  if (!ts || ts.seconds === null || ts.seconds === undefined) return undefined;
  return new Date(Number(ts.seconds.toString()) * 1000 + Math.floor((ts.nanos ?? 0) / 1e6));
}

/** `42s`, `5m 3s`, `2h 10m`, `3d 4h`. */
export function formatDuration(ms: number): string {
  const s = Math.max(0, Math.round(ms / 1000));
  if (s < 60) return `${s}s`;
  const [d, h, m] = [Math.floor(s / 86400), Math.floor((s % 86400) / 3600), Math.floor((s % 3600) / 60)];
  if (d) return `${d}d ${h}h`;
  if (h) return `${h}h ${m}m`;
  return `${m}m ${s % 60}s`;
}

/** `500ms`, `30s`, `5m`, `2h`, `1d`, or `0`. */
export function parseDuration(text: string): number | undefined {
  const m = /^(\d+(?:\.\d+)?)(ms|s|m|h|d)$/.exec(text.trim());
  if (!m) return text.trim() === '0' ? 0 : undefined;
  const unit = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 }[m[2] as 'ms' | 's' | 'm' | 'h' | 'd'];
  return Math.round(Number(m[1]) * unit);
}

/** Runs `fn` over `items` with at most `concurrency` calls in flight, so thousands of sagas are not thousands of RPCs at once. */
export async function forEachLimit<T>(
  items: readonly T[],
  concurrency: number,
  fn: (item: T) => Promise<void>,
): Promise<void> {
  let next = 0;
  const lane = async (): Promise<void> => {
    while (next < items.length) await fn(items[next++]);
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, items.length) }, lane));
}
