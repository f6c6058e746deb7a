import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import type { temporal } from '@temporalio/proto';
import { historyFromJSON } from '@temporalio/common/lib/proto-utils';

// The paths of the sagas that test/replay/record-histories.ts records, one history each: the newest
// generation of test/replay/histories/ holds exactly these (replay.test.ts checks it).
export const RECORDED_PATHS = [
  'paid-in-time',
  'support-refund',
  'refund-failed-then-made-again',
  'declined-then-paid',
  'declined-until-lapse',
  'delayed-payment-succeeded',
  'delayed-payment-failed',
  'delayed-payment-held-past-hold',
  'buyer-cancel',
  'operator-cancel',
  'lapsed',
  'late-payment-retaken',
  'late-payment-refunded',
  'late-refund-refused-then-retried',
  'expire-failing-payment-raced',
  'operator-cancel-while-refunding',
  'support-refund-pending-then-succeeded',
  'stray-payment-refunded',
  'session-refused',
  'session-answers-lost',
  'session-rate-limited',
  'buyer-cancel-before-session',
  'address-limit-refunded',
  'hold-refused',
] as const;
export type RecordedPath = (typeof RECORDED_PATHS)[number];

/** Where the generations of recorded histories are: one folder per version that recorded them. */
export const HISTORIES_DIR = path.join(__dirname, 'histories');

/** Every recorded history of every generation, as `<generation>/<path>.json`. */
export function recordedHistoryFiles(): string[] {
  return readdirSync(HISTORIES_DIR, { withFileTypes: true })
    .filter((d) => d.isDirectory())
    .flatMap((generation) =>
      readdirSync(path.join(HISTORIES_DIR, generation.name))
        .filter((f) => f.endsWith('.json'))
        .map((f) => `${generation.name}/${f}`),
    );
}

/** The recorded histories to replay, each named by its file. */
export function recordedHistories(
  files = recordedHistoryFiles(),
): { workflowId: string; history: temporal.api.history.v1.IHistory }[] {
  return files.map((file) => ({
    workflowId: file,
    history: historyFromJSON(JSON.parse(readFileSync(path.join(HISTORIES_DIR, file), 'utf8'))),
  }));
}
