import { html, type Html } from './html';
import { fromNow } from './money';

// Moments as a buyer reads them: how long from now ("in 9 min"), and the clock time. The server
// writes both (UTC, the only zone it knows); with JavaScript the page's script (web/live.ts) ticks
// the count every second and rewrites the clock in the buyer's own time zone.

// Made once: `toLocaleDateString` with options builds a formatter at each call (63 µs a call against
// 1.7 µs for a kept one, measured; the most of a confirmation notice's CPU in a profiled drill).
const WEEKDAY = new Intl.DateTimeFormat('en-GB', { weekday: 'short', day: 'numeric', month: 'short', timeZone: 'UTC' });
const DATE = new Intl.DateTimeFormat('en-GB', { day: 'numeric', month: 'short', year: 'numeric', timeZone: 'UTC' });

/** The clock time in UTC: "05:23 UTC", with the day when it is not `now`'s: "Thu 10 Dec, 05:23 UTC". */
export function utcClock(iso: string, now: Date): string {
  const at = new Date(iso);
  const time = at.toISOString().slice(11, 16);
  if (at.toISOString().slice(0, 10) === now.toISOString().slice(0, 10)) return `${time} UTC`;
  return `${WEEKDAY.format(at).replace(',', '')}, ${time} UTC`;
}

/** A moment as a receipt gives it, whatever day it is now: "3 Dec 2026, 17:40 UTC". */
export function receiptTime(iso: string): string {
  const at = new Date(iso);
  return `${DATE.format(at)}, ${at.toISOString().slice(11, 16)} UTC`;
}

/**
 * A deadline or an expected moment: "in 9 min (05:23 UTC)". The count is a `<time data-deadline>`
 * the script ticks; the clock a `data-clock` the script puts in the buyer's time. `reload`: when it
 * comes, the script loads the page again (true) or goes to that address.
 */
export function countdown(iso: string, now: Date, o: { id?: string; reload?: boolean | string } = {}): Html {
  const left = (Date.parse(iso) - now.getTime()) / 1000;
  const id = o.id ? html` id="${o.id}"` : html``;
  return html`<time${id} datetime="${iso}" data-deadline${
    typeof o.reload === 'string' ? html` data-reload="${o.reload}"` : o.reload ? html` data-reload` : html``
  }>${fromNow(left)}</time>
    <span data-clock="${iso}">(${utcClock(iso, now)})</span>`;
}

/** When the page was written: "Updated 14:32:05 UTC" (the script moves it on with each poll). */
export function updatedAt(now: Date): Html {
  const iso = now.toISOString();
  return html`<p class="muted" id="updated">
    Updated <time datetime="${iso}" data-updated>${iso.slice(11, 19)} UTC</time>.
  </p>`;
}
