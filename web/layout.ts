import { html, type Html } from './html';
import { LIVE_SCRIPT, liveAttributes, type Live } from './live';

// The frame of every buyer page: lang, charset, viewport, a heading per page, who is signed in, and
// a few lines of CSS. One script (web/live.ts) ticks deadlines and keeps a waiting page up to date
// in place; without JavaScript a page that must refresh itself does it with a
// <meta http-equiv="refresh"> inside <noscript>, so it never reloads under a page that has the script.

export interface Frame {
  title: string;
  main: Html;
  /** The signed-in buyer, shown in the header; absent: a sign-in link when `signInHref` is set. */
  buyer?: string;
  signInHref?: string;
  /** Without JavaScript: reload the page after this many seconds (an opening; else `live.seconds`). */
  refreshSeconds?: number;
  /** Go to this URL (on to the checkout once it is ready): at once with JavaScript, after refreshSeconds without. */
  refreshTo?: string;
  /** false: with JavaScript, not at once (a deadline on the page goes there when it comes). */
  goOnAtOnce?: boolean;
  /** A page waiting for news: what its script polls (web/live.ts). */
  live?: Live;
  /** The server's clock, which the page's deadlines count on. */
  now?: Date;
}

const STYLE = `
body{font:16px/1.5 system-ui,sans-serif;margin:0;color:#1a1a1a;background:#fafafa}
header,main,footer{max-width:42rem;margin:0 auto;padding:0 1rem}
header{display:flex;justify-content:space-between;align-items:baseline;gap:1rem;border-bottom:1px solid #ddd}
header form{display:inline;margin:0 0 0 .5rem}header form button{padding:.1rem .5rem;font-size:.875rem;background:#fff;color:#0550ae}
header a{color:inherit}
ul.products{list-style:none;padding:0}
ul.products h2{margin:.25rem 0;font-size:1.25rem}
ul.products li{background:#fff;border:1px solid #ddd;border-radius:6px;padding:.75rem 1rem;margin:.5rem 0}
.price{font-weight:600}
.notice{background:#fff;border-left:4px solid #888;padding:.5rem 1rem}
.notice.good{border-color:#1a7f37}.notice.bad{border-color:#b3261e}.notice.wait{border-color:#9a6700}
form{margin:1rem 0}label{display:block;margin:.5rem 0 .25rem}
input{font:inherit;padding:.35rem .5rem}
button{font:inherit;padding:.5rem 1.25rem;border-radius:6px;border:1px solid #0550ae;background:#0969da;color:#fff;cursor:pointer}
a.button{display:inline-block;padding:.5rem 1.25rem;border-radius:6px;background:#0969da;color:#fff;text-decoration:none}
.muted{color:#57606a;font-size:.875rem}
.rules{padding-left:1.25rem}
.visually-hidden{position:absolute;width:1px;height:1px;overflow:hidden;clip:rect(0 0 0 0);white-space:nowrap}
@media (max-width:40rem){main form button[type=submit]{width:100%;padding:.75rem}}
`;

/** One whole HTML document. */
export function layout(f: Frame): string {
  const who = f.buyer
    ? html`<div>
        Signed in as <strong id="buyer">${f.buyer}</strong> · <a href="/purchases" id="my-purchases">My purchases</a>
        <form method="post" action="/sign-out"><button type="submit" id="sign-out">Sign out</button></form>
      </div>`
    : f.signInHref
      ? html`<p><a href="${f.signInHref}">Sign in</a></p>`
      : html``;
  const target = f.refreshTo ? `; url=${f.refreshTo}` : '';
  const seconds = f.refreshSeconds ?? f.live?.seconds;
  const refresh = seconds
    ? html`<noscript><meta http-equiv="refresh" content="${`${seconds}${target}`}" /></noscript>`
    : html``;
  const now = f.now ?? new Date();
  return html`<!doctype html>
    <html lang="en">
      <head>
        <meta charset="utf-8" />
        <meta name="viewport" content="width=device-width,initial-scale=1" />
        ${refresh}
        <title>${f.title}</title>
        <style>
          ${STYLE}
        </style>
      </head>
      <body data-now="${now.getTime()}">
        <header>
          <p><a href="/">Flash sale</a></p>
          ${who}
        </header>
        <main${liveAttributes(f.live, f.goOnAtOnce === false ? undefined : f.refreshTo)}>${f.main}</main>
        <div id="announce" class="visually-hidden" aria-live="polite"></div>
        ${LIVE_SCRIPT}
      </body>
    </html> `.text;
}
