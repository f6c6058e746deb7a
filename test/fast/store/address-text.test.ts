import { fc, testProp } from '@fast-check/ava';
import test from 'ava';
import { foldText } from '../../../store/address-text';
import { normaliseText } from '../../../store/addresses';

// The Unicode steps of the per-address key (store/address-text.ts, store/addresses.ts): folding text
// the way a parcel's label reads it. (Whole addresses, spelling by spelling: addresses.test.ts.)

const INVISIBLE = ['\u00AD', '\u200B', '\u200C', '\u200D', '\u2060', '\uFEFF', '\u200E', '\u202B', '\u034F', '\uFE0F'];

test('compatibility forms, accents, digits of other scripts and lookalike letters fold to plain Latin', (t) => {
  t.is(foldText('Ｆｉｆｔｈ 𝐀𝐯𝐞'), 'fifth ave');
  t.is(foldText('\uFB01fth'), 'fifth', 'a ligature');
  t.is(foldText('Rüe Crème'), 'rue creme');
  t.is(foldText('٣٥٠ ३५० ۴ １'), '350 350 4 1');
  t.is(foldText('\u0410venue \u0456'), 'avenue i', 'Cyrillic А and і');
  t.is(foldText('STRAßE'), 'strasse');
  t.is(foldText('ΟΔΟΣ'), foldText('οδος'), 'a final sigma is a sigma');
});

test('ASCII is never folded into other ASCII: m is not rn, 1 is not l, 0 is not O', (t) => {
  t.is(foldText('Cam Road'), 'cam road');
  t.is(foldText('Flat 1 Flat l Flat 0 Flat O'), 'flat 1 flat l flat 0 flat o');
});

testProp(
  'printable ASCII folds to its lower case, character for character',
  [fc.string({ unit: fc.constantFrom(...' !#,-./0123456789:ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz') })],
  (t, s) => {
    t.is(foldText(s), s.toLowerCase());
  },
);

testProp(
  'an invisible character inside a word changes nothing',
  [fc.stringMatching(/^[A-Za-z0-9 ]{0,20}$/), fc.nat(), fc.constantFrom(...INVISIBLE)],
  (t, s, at, invisible) => {
    const i = at % (s.length + 1);
    t.is(foldText(s.slice(0, i) + invisible + s.slice(i)), foldText(s));
  },
);

testProp('folding twice is folding once', [fc.string({ unit: 'grapheme', maxLength: 30 })], (t, s) => {
  t.is(foldText(foldText(s)), foldText(s));
});

testProp(
  'the street text keeps only letters and digits, two numbers apart, without leading zeros',
  [fc.string({ unit: 'grapheme-ascii', maxLength: 40 })],
  (t, s) => {
    const text = normaliseText(s);
    t.regex(text, /^[\p{L}\p{N} ]*$/u);
    t.notRegex(text, /(^|\D)0\d/, 'no number keeps a leading zero');
    t.is(normaliseText(text), text, 'normalising again changes nothing');
  },
);

test('numbers stay apart and lose their leading zeros; nothing in, nothing out', (t) => {
  t.is(normaliseText('Unit 1, 23'), 'unit1 23');
  t.is(normaliseText('Apt 004'), 'apt4');
  t.is(normaliseText('Apt 0'), 'apt0');
  t.is(normaliseText(null), '');
  t.is(normaliseText(undefined), '');
});
