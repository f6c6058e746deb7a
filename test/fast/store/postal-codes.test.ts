import { fc, testProp } from '@fast-check/ava';
import test from 'ava';
import { normalisePostalCode } from '../../../store/postal-codes';

// Postal codes as the per-address key compares them (store/postal-codes.ts): the input is already
// folded to upper-case letters and digits; one delivery area gives one code however it is written.

const digits = (n: number) => fc.stringMatching(new RegExp(`^[0-9]{${n}}$`));

testProp(
  'a US ZIP+4, or a ZIP with anything after it, is its ZIP',
  [digits(5), fc.stringMatching(/^[0-9]{0,4}$/)],
  (t, zip, plus) => {
    t.is(normalisePostalCode('US', zip + plus), zip);
    t.is(normalisePostalCode('PR', `US${zip}${plus}`), zip, 'a territory, with the country prefix');
  },
);

testProp(
  'a German, French or Japanese code written with its country prefix is its digits',
  [fc.constantFrom<[string, string, number]>(['DE', 'D', 5], ['FR', 'FR', 5], ['JP', 'JP', 7]), digits(7)],
  (t, [country, prefix, n], seven) => {
    const code = seven.slice(0, n);
    t.is(normalisePostalCode(country, `${prefix}${code}`), code);
    t.is(normalisePostalCode(country, code), code);
  },
);

test('UK, Canadian and Dutch codes get their space, and a letter read as a digit where one goes', (t) => {
  t.is(normalisePostalCode('GB', 'SW1A2AA'), 'SW1A 2AA');
  t.is(normalisePostalCode('GB', 'SWIA2AA'), 'SW1A 2AA');
  t.is(normalisePostalCode('JE', 'JE24WD'), 'JE2 4WD');
  t.is(normalisePostalCode('CA', 'K1M1M4'), 'K1M 1M4');
  t.is(normalisePostalCode('CA', 'KIMIM4'), 'K1M 1M4');
  t.is(normalisePostalCode('NL', '1012LG'), '1012 LG');
  t.is(normalisePostalCode('NL', 'NL1012LG'), '1012 LG');
  t.is(normalisePostalCode('NL', '1O12LG'), '1012 LG', 'O where a digit goes');
});

test('a code that fits no format, or of a country not listed, stays as written', (t) => {
  t.is(normalisePostalCode('US', '1234'), '1234');
  t.is(normalisePostalCode('GB', 'NOTACODE'), 'NOTACODE');
  t.is(normalisePostalCode('CA', '12345'), '12345');
  t.is(normalisePostalCode('DE', '1011'), '1011');
  t.is(normalisePostalCode('IE', 'D02X285'), 'D02X285');
  t.is(normalisePostalCode('', 'ABC'), 'ABC');
});

testProp(
  'normalising a normalised code changes nothing',
  [fc.constantFrom('US', 'GB', 'CA', 'NL', 'DE', 'FR', 'BR', 'JP', 'IE', 'AT'), fc.stringMatching(/^[A-Z0-9]{1,10}$/)],
  (t, country, code) => {
    const once = normalisePostalCode(country, code);
    t.is(normalisePostalCode(country, once.replace(/ /g, '')), once);
  },
);
