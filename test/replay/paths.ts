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
  'support-refund-pending-then-succeeded',
  'stray-payment-refunded',
  'session-refused',
  'session-answers-lost',
  'session-rate-limited',
  'address-limit-refunded',
] as const;
export type RecordedPath = (typeof RECORDED_PATHS)[number];
