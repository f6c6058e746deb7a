import { html, Html } from './html';
import { formatWait, fromNow } from './money';

// The pages' one script, for what only JavaScript can do better; every page works without it.
// - Deadlines (`time[data-deadline]`, web/time.ts) tick every second, on the server's clock (the page
//   carries it: a wrong clock in the browser does not move a deadline); one marked `data-reload`
//   loads the page again when it comes (the opening), or the address it names (a refused Buy's
//   product page, once it is worth trying again). Clock times (`data-clock`) read in the
//   buyer's own time zone.
// - A page still waiting for news (`main[data-poll]`) polls the JSON of its state, backing off while
//   nothing changes (and following `nextPollSeconds` when the answer has one). When a field the page
//   shows changes, or at least every REFETCH_MS, it fetches the page itself and puts its <main> in
//   place of this one: no reload, the text a screen reader is on stays, and the news is read out from
//   one polite live region (#announce) that stays in the page. `data-go` on <main> sends the buyer on
//   (to Stripe's page, once the checkout is ready).
// - A form's button, once pressed, says the page is busy; a Buy pressed before the bot check's
//   widget (solving since the page loaded) has its solution is sent once it has.
// Without JavaScript the page reloads itself instead, with a <meta http-equiv="refresh"> inside
// <noscript> (web/layout.ts).

/** A page that keeps itself up to date: what it polls, what it shows of the answer, and how often. */
export interface Live {
  /** The JSON of the page's state (same origin: the JSON API, or the page's own path asked for JSON). */
  pollUrl: string;
  /** The fields of that JSON the page shows, as it showed them: a change in any fetches the page again. */
  watch: Record<string, unknown>;
  /** The first poll after this many seconds (and, without JavaScript, the page's reload). */
  seconds: number;
  /** The back-off stops growing here. */
  maxSeconds: number;
}

/** Even when no watched field changed, the page (its estimates, its counts) is fetched again this often. */
const REFETCH_MS = 30_000;
/** Each poll that brings nothing new waits this much longer than the one before, up to `maxSeconds`. */
const BACK_OFF = 1.5;

/** The attributes of <main> for a live page. */
export function liveAttributes(live: Live | undefined, goTo: string | undefined): Html {
  const poll = live
    ? html` data-poll="${live.pollUrl}" data-watch="${JSON.stringify(live.watch, (_k, v: unknown) => v ?? null)}"
      data-poll-seconds="${live.seconds}" data-poll-max="${live.maxSeconds}"`
    : html``;
  return html`${poll}${goTo ? html` data-go="${goTo}"` : html``}`;
}

/** The script itself, as one IIFE; `formatWait` and `fromNow` are web/money.ts's own code. */
const CLIENT = `(() => {
  const __name = (f) => f;
  const formatWait = ${formatWait.toString()};
  const fromNow = ${fromNow.toString()};
  const skew = Number(document.body.dataset.now) - Date.now();
  const now = () => Date.now() + skew;
  let reloading = false;
  const sameDay = (d) => new Date().toDateString() === d.toDateString();
  const clock = (iso) => {
    const d = new Date(iso);
    const opts = sameDay(d)
      ? { hour: '2-digit', minute: '2-digit' }
      : { weekday: 'short', day: 'numeric', month: 'short', hour: '2-digit', minute: '2-digit' };
    return d.toLocaleString([], opts) + ' your time';
  };
  const paint = () => {
    for (const el of document.querySelectorAll('time[data-deadline]')) {
      const s = (Date.parse(el.getAttribute('datetime')) - now()) / 1000;
      const text = fromNow(s);
      if (el.textContent !== text) el.textContent = text;
      if (s < 1 && el.hasAttribute('data-reload') && !reloading) {
        reloading = true;
        const to = el.getAttribute('data-reload');
        setTimeout(() => (to ? location.assign(to) : location.reload()), 1000 + Math.random() * 1000);
      }
    }
  };
  const clocks = () => {
    for (const el of document.querySelectorAll('[data-clock]')) el.textContent = '(' + clock(el.dataset.clock) + ')';
    for (const el of document.querySelectorAll('time[data-updated]')) {
      el.textContent = new Date(el.getAttribute('datetime')).toLocaleTimeString();
    }
  };
  const goOn = () => {
    const to = document.querySelector('main').dataset.go;
    if (to) setTimeout(() => location.assign(to), 500);
    return Boolean(to);
  };
  paint();
  clocks();
  setInterval(paint, 1000);
  // A form's button, once pressed, says the page is busy. A form whose bot check (web/bot-check.ts,
  // solving since the page loaded) has no solution yet is sent once the widget has one.
  document.addEventListener('submit', (e) => {
    const form = e.target;
    const b = form.querySelector('button[type="submit"]');
    if (b && !b.hasAttribute('aria-busy')) {
      b.setAttribute('aria-busy', 'true');
      b.dataset.label = b.textContent;
      b.textContent = 'One moment…';
    }
    const widget = form.querySelector('altcha-widget');
    const solution = form.querySelector('input[name="altcha"]');
    if (widget && !(solution && solution.value)) {
      e.preventDefault();
      widget.addEventListener('verified', () => setTimeout(() => form.requestSubmit(), 0), { once: true });
    }
  });
  // Back to this page from the next one (the browser kept it): the buttons are themselves again.
  addEventListener('pageshow', () => {
    for (const b of document.querySelectorAll('button[aria-busy]')) {
      b.removeAttribute('aria-busy');
      b.textContent = b.dataset.label;
    }
  });
  if (goOn()) return;

  let main = document.querySelector('main');
  if (!main.dataset.poll) return;
  let url = main.dataset.poll;
  let watch = JSON.parse(main.dataset.watch);
  let delay = Number(main.dataset.pollSeconds) * 1000;
  let fetchedAt = Date.now();
  const announce = document.getElementById('announce');
  const changed = (json) => Object.keys(watch).some((k) => JSON.stringify(json[k] ?? null) !== JSON.stringify(watch[k] ?? null));
  const refetch = async () => {
    const res = await fetch(location.href, { headers: { accept: 'text/html' }, credentials: 'same-origin' });
    if (!res.ok) throw new Error(String(res.status));
    const doc = new DOMParser().parseFromString(await res.text(), 'text/html');
    const next = doc.querySelector('main');
    if (!next) throw new Error('no main');
    const news = next.querySelector('[role="status"], [role="alert"]');
    const before = main.querySelector('[role="status"], [role="alert"]');
    main.replaceWith(next);
    main = next;
    document.title = doc.title;
    fetchedAt = Date.now();
    // News is what the status says, not its ticking counts and clocks.
    const words = (el) => {
      const c = el.cloneNode(true);
      for (const t of c.querySelectorAll('time, [data-clock]')) t.remove();
      return c.textContent.replace(/\\s+/g, ' ').trim();
    };
    const changedNews = news && (!before || words(before) !== words(news));
    paint();
    clocks();
    // Read out in the buyer's own time, as the page now shows it.
    if (changedNews) announce.textContent = news.textContent.replace(/\\s+/g, ' ').trim();
  };
  const poll = async () => {
    const max = Number(main.dataset.pollMax) * 1000;
    try {
      const res = await fetch(url, { headers: { accept: 'application/json' }, credentials: 'same-origin' });
      if (!res.ok) throw new Error(String(res.status));
      const json = await res.json();
      if (typeof json.ticket === 'string' && url.includes('/v1/queue/')) url = '/v1/queue/' + encodeURIComponent(json.ticket);
      const news = changed(json);
      if (news || Date.now() - fetchedAt >= ${REFETCH_MS}) {
        await refetch();
        if (goOn() || !main.dataset.poll) return;
        watch = JSON.parse(main.dataset.watch);
      }
      const updated = main.querySelector('time[data-updated]');
      if (updated) {
        updated.setAttribute('datetime', new Date(now()).toISOString());
        updated.textContent = new Date(now()).toLocaleTimeString();
      }
      delay = news ? Number(main.dataset.pollSeconds) * 1000 : Math.min(max, delay * ${BACK_OFF});
      if (typeof json.nextPollSeconds === 'number') delay = Math.max(delay, json.nextPollSeconds * 1000);
    } catch {
      delay = Math.min(max, delay * 2);
    }
    setTimeout(poll, document.hidden ? Math.max(delay, max) : delay);
  };
  setTimeout(poll, delay);
})();`;

/** The script, at the end of every page's <body>. */
export const LIVE_SCRIPT = html`<script>
  ${new Html(CLIENT)};
</script>`;
