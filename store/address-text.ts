import unhomoglyph from 'unhomoglyph';

// The Unicode steps of the per-address key (docs/rules.md, "The per-address limit"): one
// address written with other characters that look or read the same gives the same text. A buyer
// who wants past the limit controls every character of the address, so each step closes a way of
// writing a new key that the parcel's label still reads as the old address.

// Marks (accents) go with the invisible characters: both are dropped without splitting the word
// they sit in, where a word break would give `fif th` for `Fif\u00ADth`.
const DROPPED = /[\p{M}\p{Cf}\p{Default_Ignorable_Code_Point}]/gu;
const DECIMAL_DIGIT = /\p{Nd}/u;
const ASCII_LETTERS_OR_DIGITS = /^[A-Za-z0-9]+$/;

/** NFKD, accents and invisible characters dropped, then NFKC: `ﬁ`, `１`, `𝐀` are `fi`, `1`, `A`. */
function plain(s: string): string {
  return s.normalize('NFKD').replace(DROPPED, '').normalize('NFKC');
}

/**
 * The value of a decimal digit of any script. Unicode assigns each script's digits 0 to 9 to
 * consecutive code points, and runs of them hold whole sets of ten, so the distance from the start
 * of the run, modulo 10, is the digit.
 */
function digitValue(digit: string): string {
  const cp = digit.codePointAt(0)!;
  let start = cp;
  while (start > 0 && DECIMAL_DIGIT.test(String.fromCodePoint(start - 1))) start--;
  return String((cp - start) % 10);
}

/** The ASCII letters or digits the table folds a character to (lower case), or null when none. */
function latinOf(c: string): string | null {
  const latin = plain(unhomoglyph(c));
  return ASCII_LETTERS_OR_DIGITS.test(latin) ? latin.toLowerCase() : null;
}

/**
 * The Latin letters or ASCII digits a case-folded character is confusable with, by Unicode's
 * confusables table (UTS #39, through `unhomoglyph`), or null when it looks like none. The table
 * compares as written, capitals apart, but the key ignores case, so a letter is folded by its small
 * form and, when that looks like no Latin letter (Cyrillic `н`, `в`, `т`), by its capital (`Н` is `H`).
 * ASCII characters are never folded: the table's ASCII entries (`m` → `rn`, `1` → `l`, `0` → `O`)
 * would merge names and numbers a reader tells apart (Cam Road and Carn Road, Flat 1 and Flat l).
 */
function lookalike(c: string): string | null {
  if (c.charCodeAt(0) < 0x80) return null;
  const small = latinOf(c);
  if (small) return small;
  const capital = latinOf(c.toUpperCase());
  // The table draws every upright stroke (I, l, 1, Greek Ι, Cyrillic І) as `l`; a capital one is an I.
  return capital === 'l' ? 'i' : capital;
}

/**
 * Text as the key compares it: compatibility forms unified (NFKC), accents and invisible or
 * formatting characters dropped, digits of every script as ASCII digits, case folded (`ß` is `ss`),
 * and each non-ASCII character that looks like Latin letters or digits replaced by them. Punctuation
 * and spacing are left in place for the caller.
 */
export function foldText(s: string): string {
  // Upper then lower case is Unicode's full case folding for all but a few letters (ß → SS → ss);
  // the Greek final sigma is one of those.
  const folded = plain(plain(s).toUpperCase().toLowerCase()).replace(/ς/g, 'σ');
  let out = '';
  for (const c of folded) out += DECIMAL_DIGIT.test(c) ? digitValue(c) : (lookalike(c) ?? c);
  return out;
}
