/** An amount in minor units as the buyer reads it: 12900 usd → "$129.00", 500 jpy → "¥500". */
export function formatMoney(minor: number, currency: string): string {
  try {
    const format = new Intl.NumberFormat('en', { style: 'currency', currency: currency.toUpperCase() });
    const digits = format.resolvedOptions().maximumFractionDigits ?? 2;
    return format.format(minor / 10 ** digits);
  } catch {
    // A currency code Intl does not know: show the minor units as they are, with the code.
    return `${minor} ${currency.toUpperCase()} (minor units)`;
  }
}

/** A wait in words: 75 → "1 min 15 s", 7300 → "2 h 1 min". */
export function formatWait(seconds: number): string {
  const s = Math.max(0, Math.round(seconds));
  if (s < 60) return `${s} s`;
  const h = Math.floor(s / 3600);
  const m = Math.floor((s % 3600) / 60);
  if (h > 0) return m > 0 ? `${h} h ${m} min` : `${h} h`;
  const rest = s % 60;
  return rest > 0 ? `${m} min ${rest} s` : `${m} min`;
}

/**
 * How far away a moment is, in words: "in 9 min 5 s", "in 2 h 1 min", "in 6 days"; "now" once it has
 * come. Self-contained with formatWait: the page's script carries these two functions' own code
 * (web/live.ts), so the count it ticks reads as the server wrote it.
 */
export function fromNow(seconds: number): string {
  if (seconds < 1) return 'now';
  if (seconds >= 2 * 86_400) return `in ${Math.floor(seconds / 86_400)} days`;
  return `in ${formatWait(seconds)}`;
}
