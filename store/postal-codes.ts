import { fix as fixUkPostcode, parse as parseUkPostcode } from 'postcode';

// Postal codes as the per-address key compares them (docs/rules.md, "The per-address limit"):
// one code per delivery area however it is written, so a part the post office ignores (a ZIP+4's
// last four digits, a country prefix, the space) does not make a new address, and two real codes
// stay apart. Input is already folded (store/address-text.ts) and reduced to upper-case letters and
// digits.

/** Countries and territories whose mail takes US ZIP codes (5 digits, or ZIP+4). */
const US_ZIP = ['US', 'PR', 'VI', 'GU', 'AS', 'MP', 'MH', 'FM', 'PW'];
/** The UK's postcode system: Great Britain and Northern Ireland, and the Crown Dependencies. */
const UK_POSTCODE = ['GB', 'GG', 'JE', 'IM'];

/**
 * Countries whose postal codes are digits only, by length; written as `D-10117`, `FR-75002`, `LT-01100`
 * or `123 45`, they are those digits. A country missing here keeps its code as written, in upper case
 * and without spaces or punctuation.
 */
const DIGITS: Record<number, string[]> = {
  4: ['AT', 'AU', 'BE', 'BG', 'CH', 'CY', 'DK', 'HU', 'LI', 'LU', 'LV', 'NO', 'NZ', 'PH', 'SI', 'ZA'],
  5: [
    ...['DE', 'FR', 'MC', 'GP', 'MQ', 'GF', 'RE', 'YT', 'PM', 'BL', 'MF', 'IT', 'ES', 'FI', 'EE', 'HR', 'LT'],
    ...['GR', 'SE', 'CZ', 'SK', 'PL', 'MX', 'TR', 'TH', 'MY', 'ID', 'KR', 'UA', 'RS', 'EG', 'DZ', 'MA'],
  ],
  6: ['RU', 'IN', 'CN', 'SG', 'RO', 'BY'],
  7: ['JP', 'IL', 'PT'],
  8: ['BR'],
};
const PATTERNS = new Map<string, string>([
  ['CA', 'A9A 9A9'],
  ['NL', '9999 AA'],
  ...Object.entries(DIGITS).flatMap(([n, countries]) => countries.map((c): [string, string] => [c, '9'.repeat(+n)])),
]);

// A letter where the code has a digit, or a digit where it has a letter, is read as what it looks
// like, as `postcode`'s fix does for the UK: no real code has the other there.
const AS_DIGIT: Record<string, string> = { O: '0', I: '1' };
const AS_LETTER: Record<string, string> = { '0': 'O', '1': 'I' };

/**
 * `code` in the country's format (`A9A 9A9`: letters, digits and where the space goes), or null when
 * it has another length or shape.
 */
function inFormat(code: string, format: string): string | null {
  const slots = format.replace(/ /g, '');
  if (code.length !== slots.length) return null;
  let out = '';
  for (const [i, slot] of [...slots].entries()) {
    const c = slot === '9' ? (AS_DIGIT[code[i]] ?? code[i]) : (AS_LETTER[code[i]] ?? code[i]);
    if (slot === '9' ? !/\d/.test(c) : !/[A-Z]/.test(c)) return null;
    out += c;
  }
  const space = format.indexOf(' ');
  return space < 0 ? out : `${out.slice(0, space)} ${out.slice(space)}`;
}

/**
 * The code in its format, also once a leading country prefix (`D`, `FR`, `LT`) is taken off; with
 * `leading`, only the code's first characters need to fit (a ZIP+4 is its ZIP).
 */
function withFormat(code: string, format: string, leading = false): string | null {
  const fit = (c: string) => inFormat(leading ? c.slice(0, format.replace(/ /g, '').length) : c, format);
  const prefix = /^[A-Z]{1,3}/.exec(code)?.[0];
  return fit(code) ?? (prefix ? fit(code.slice(prefix.length)) : null);
}

/**
 * The postal code as the key has it, for a country (ISO code, upper case): a US ZIP+4 by its ZIP
 * (the first five digits, whatever follows), a UK postcode as outward and inward code (`SW1A 2AA`),
 * a Canadian one as `A1A 1A1`, a Dutch one as `1234 AB`, digits-only codes (DE, FR and the others of
 * `DIGITS`) as their digits. A code that does not fit its country's format, or of a country not
 * listed, stays as given: upper-case letters and digits.
 */
export function normalisePostalCode(country: string, code: string): string {
  if (US_ZIP.includes(country)) {
    return withFormat(code, '99999', true) ?? code;
  }
  if (UK_POSTCODE.includes(country)) {
    const uk = parseUkPostcode(fixUkPostcode(code));
    return uk.valid ? `${uk.outcode} ${uk.incode}` : code;
  }
  const format = PATTERNS.get(country);
  return (format && withFormat(code, format)) || code;
}
