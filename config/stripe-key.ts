// What a Stripe key says of itself. Its own module so that config/dev-secrets.ts, which every
// loader's reader calls, need not import the Stripe loader (config/stripe.ts), which imports the reader.

/** A live-mode Stripe key: real money moves, and test-mode events are not ours. */
export function isLiveKey(key: string): boolean {
  return /^(sk|rk)_live_/.test(key);
}
