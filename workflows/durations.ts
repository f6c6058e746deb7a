// Every wait the workflows time on their own clock, in one place. The fast test tier bundles the
// workflows with test/fast/durations.ts in this module's place (short waits, the same shape), so
// each branch that waits days is run in a second; production and the stack tier run these. Replay
// does not compare a timer's duration, so a change here needs no patch: it applies to the timers a
// running saga starts from then on.

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;

export const DURATIONS = {
  /** How long a session completed with a delayed payment method (a bank debit) may take to settle. */
  asyncSettleMs: 7 * DAY,
  /**
   * How much longer than that wait a settling payment's hold lasts: the time the saga has to read
   * Stripe's session when no event settled it, before the unit could be reclaimed from a buyer who paid.
   */
  settleReadMarginMs: HOUR,
  /** How long a follow-up run (a payment event for a closed saga) waits for the event that started it. */
  followUpEventMs: MINUTE,
  /** How long to wait for a refund's webhook before reading the refund, per round; the last repeats. */
  refundReadAfterMs: [MINUTE, 10 * MINUTE, HOUR, 6 * HOUR],
  /** A refund still pending this long is put in front of support. */
  refundPendingTooLongMs: 30 * DAY,
  /** The backoff between tries of a step Stripe refused: the first wait, doubled each time up to the last. */
  refusalBackoffFirstMs: 5_000,
  refusalBackoffMaxMs: HOUR,
} as const;
