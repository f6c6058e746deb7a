import { html, type Html } from './html';

// The bot check on a form (products with `botCheck`): the `altcha` widget solves a proof-of-work
// challenge in the browser and puts its payload in the form's `altcha` field. With JavaScript off
// there is no widget: the page says why Buy or Join needs it, instead of a form that fails silently.

/** Where the API serves the widget's script (api/routes/bot-check.ts) and the challenges. */
const WIDGET_SCRIPT = '/assets/altcha.min.js';
const CHALLENGE_URL = '/v1/bot-check/challenge';

/**
 * altcha 3.2's options that are not attributes go in its `configuration` attribute (JSON): no
 * "Protected by ALTCHA" footer nor logo. `auto="onload"`: it solves when the page loads, so the
 * check is done by the time Buy is pressed; a press that comes first waits for it (web/live.ts).
 * (Not `onsubmit` with a solve started by hand: the widget then submits the form itself once solved.)
 */
const WIDGET_CONFIGURATION = JSON.stringify({ hideFooter: true, hideLogo: true });

/** The widget inside a form whose submit is `action` ("Buy", "Join the queue"). */
export function botCheckField(action: string): Html {
  return html`<div class="bot-check">
    <script type="module" src="${WIDGET_SCRIPT}"></script>
    <altcha-widget
      challenge="${CHALLENGE_URL}"
      name="altcha"
      auto="onload"
      configuration="${WIDGET_CONFIGURATION}"
    ></altcha-widget>
    <noscript>
      <p class="notice bad" id="bot-check-noscript">
        This sale checks that every buyer is a person: when you press ${action}, your browser solves a small puzzle (a
        few seconds of work, no tracking), and that needs JavaScript, which is off in this browser. Turn JavaScript on
        for this site to ${action.toLowerCase()}.
      </p>
    </noscript>
  </div>`;
}
