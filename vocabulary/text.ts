// Free text a person writes for the records (a support refund's reason, a note): cleaned the same way
// whichever door it came through (the API's support routes, the support CLI). Postgres refuses a NUL,
// jsonb a lone surrogate, and a newline in a reason would forge a line in a log or a notification.

/** Control characters become spaces, lone surrogates U+FFFD, and the ends are trimmed. */
export function sanitiseText(s: string): string {
  return s
    .replace(/\p{Cc}/gu, ' ')
    .replace(/\p{Cs}/gu, '\ufffd')
    .trim();
}
