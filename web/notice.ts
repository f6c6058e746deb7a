import { html, type Html } from './html';
import { layout } from './layout';
import type { Viewer } from './catalogue';
import { countdown } from './time';

// Pages that say no, or what next: refusals of a purchase, bad input, unknown pages, signing in.

export interface Notice {
  title: string;
  /** What happened and what the buyer can do, in words. */
  message: string;
  /** Try again in this many seconds (a sold-out that may clear, a busy service). */
  retryAfterSeconds?: number;
  /** The field names the problem is about (a bad form). */
  fields?: string[];
  links?: { href: string; text: string }[];
  /** A machine-readable name of the refusal, for tests and scripts (the problem type). */
  kind: string;
  /** Load the page again by itself once retryAfterSeconds have passed (a page read that was refused). */
  reload?: boolean;
  /** Once retryAfterSeconds have passed, go here by itself (a refused form: its product page, a fresh form). */
  thenGoTo?: string;
}

export function noticePage(n: Notice, viewer: Viewer, now = new Date()): string {
  const retryAt = n.retryAfterSeconds !== undefined ? new Date(now.getTime() + n.retryAfterSeconds * 1000) : null;
  const retry = retryAt
    ? html`<p id="retry">Try again ${countdown(retryAt.toISOString(), now, { reload: n.thenGoTo ?? false })}.</p>`
    : html``;
  const fields = n.fields?.length
    ? html`<p>About: ${n.fields.map((f, i) => html`${i ? ', ' : ''}<code>${f}</code>`)}</p>`
    : html``;
  const links = n.links?.length
    ? html`<ul>
        ${n.links.map((l) => html`<li><a href="${l.href}">${l.text}</a></li>`)}
      </ul>`
    : html``;
  const main = html`<h1>${n.title}</h1>
    <p class="notice bad" id="notice" data-kind="${n.kind}" role="alert">${n.message}</p>
    ${fields}${retry}${links}`;
  const refresh =
    n.retryAfterSeconds === undefined
      ? {}
      : n.thenGoTo
        ? { refreshSeconds: n.retryAfterSeconds, refreshTo: n.thenGoTo, goOnAtOnce: false }
        : n.reload
          ? { refreshSeconds: n.retryAfterSeconds }
          : {};
  return layout({ title: n.title, main, ...refresh, ...viewer, now });
}

/** The development sign-in: a name becomes the buyer id of a token signed with the dev secret. */
export function signInPage(o: { next: string; error?: string; name?: string }): string {
  const error: Html = o.error ? html`<p class="notice bad" id="error" role="alert">${o.error}</p>` : html``;
  const main = html`<h1>Sign in</h1>
    <p>
      This is the local development sign-in: any name will do, and it is who you buy as. In production the shop's own
      login signs buyers in.
    </p>
    ${error}
    <form method="post" action="/sign-in">
      <input type="hidden" name="next" value="${o.next}" />
      <label for="name">Your name</label>
      <input id="name" name="name" autocomplete="username" required maxlength="64" value="${o.name ?? ''}" />
      <p><button type="submit" id="sign-in">Sign in</button></p>
    </form>`;
  return layout({ title: 'Sign in', main });
}
