// HTML by tagged template: every interpolated value is escaped unless it is already Html (made by
// `html` itself), so a product name with markup in it reaches the buyer as text. Arrays are joined.

const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

/** Markup that is safe to insert as it is: only `html` makes it. */
export class Html {
  constructor(readonly text: string) {}
  toString(): string {
    return this.text;
  }
}

export type Interpolation = Html | string | number | boolean | null | undefined | readonly Interpolation[];

/** Text as HTML text or attribute value: the five characters that mean something there are escaped. */
export function escapeHtml(s: string): string {
  return s.replace(/[&<>"']/g, (c) => ESCAPES[c]);
}

function render(v: Interpolation): string {
  if (v === null || v === undefined || v === false) return '';
  if (v instanceof Html) return v.text;
  if (Array.isArray(v)) return (v as readonly Interpolation[]).map(render).join('');
  return escapeHtml(String(v));
}

/** `html\`<p>${name}</p>\``: the template's own markup as written, every value escaped. */
export function html(strings: TemplateStringsArray, ...values: Interpolation[]): Html {
  let out = strings[0];
  values.forEach((v, i) => (out += render(v) + strings[i + 1]));
  return new Html(out);
}
