import type { DURATIONS as PRODUCTION } from '../../workflows/durations';

// The fast tier's workflow waits: the shape of workflows/durations.ts, each wait short enough to run
// out within a test (the fast tier's bundle puts this module in that one's place). Long enough that a
// test's own signals, sent at once, always beat them on a loaded machine.

export const DURATIONS: {
  [K in keyof typeof PRODUCTION]: (typeof PRODUCTION)[K] extends readonly number[] ? readonly number[] : number;
} = {
  asyncSettleMs: 3_000,
  settleReadMarginMs: 1_000,
  followUpEventMs: 2_000,
  refundReadAfterMs: [1_500, 1_500],
  refundPendingTooLongMs: 2_500,
  refusalBackoffFirstMs: 300,
  refusalBackoffMaxMs: 600,
};
