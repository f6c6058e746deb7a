import { createHash } from 'node:crypto';
import test from 'ava';
import { addressKey, normaliseAddress, type PostalAddress } from '../../../store/addresses';

// The per-address limit's rule (docs/rules.md, "The per-address limit"): what counts as one
// address. Each row of SAME must give its base's key, each row of APART must not: a walk-around that
// gets through, or two real addresses merged, both break the limit.

const PARIS = { line1: '12 Rue de la Paix', line2: 'Apt 4', city: 'Paris', postal_code: '75002', country: 'FR' };
const NYC = {
  line1: '350 Fifth Avenue',
  line2: 'Apt 4',
  city: 'New York',
  state: 'NY',
  postal_code: '10118',
  country: 'US',
};
const LONDON = { line1: '10 Downing Street', city: 'London', postal_code: 'SW1A 2AA', country: 'GB' };
const OTTAWA = { line1: '24 Sussex Drive', city: 'Ottawa', state: 'ON', postal_code: 'K1M 1M4', country: 'CA' };
const BERLIN = { line1: 'Friedrichstraße 43', city: 'Berlin', postal_code: '10117', country: 'DE' };
const AMSTERDAM = { line1: 'Damrak 1', city: 'Amsterdam', postal_code: '1012 LG', country: 'NL' };
const HONG_KONG = { line1: '1 Queen’s Road', city: 'Central', state: 'Hong Kong', country: 'HK' };

type Row = [what: string, base: PostalAddress, written: PostalAddress];

const SAME: Row[] = [
  // Case, spacing, punctuation, accents, and the unit moved between the lines.
  ['upper and lower case', PARIS, { ...PARIS, line1: '12 RUE DE LA PAIX', city: 'paris' }],
  ['extra spaces', PARIS, { ...PARIS, line1: '  12   rue de la  paix ', line2: ' apt   4' }],
  ['punctuation between words', PARIS, { ...PARIS, line1: '12, Rue-de-la-Paix.', line2: 'Apt. 4' }],
  ['the unit on line 1', PARIS, { ...PARIS, line1: '12 Rue de la Paix Apt 4', line2: null }],
  ['an accent', PARIS, { ...PARIS, line1: '12 Rüe de la Paix' }],
  ['the city and state (named by the postal code)', PARIS, { ...PARIS, city: 'Paris 2e', state: 'Île-de-France' }],
  // What the outside review walked through with, limit 1.
  ['ZIP+4', NYC, { ...NYC, postal_code: '10118-0001' }],
  ['a soft hyphen inside a word', NYC, { ...NYC, line1: '350 Fif\u00ADth Avenue' }],
  ['a Cyrillic А in Avenue', NYC, { ...NYC, line1: '350 Fifth \u0410venue' }],
  // What it found offline.
  ['a zero-width space inside a word', NYC, { ...NYC, line1: '350 Fif\u200Bth Avenue' }],
  ['a dot inside a word', NYC, { ...NYC, line1: '350 Fif.th Avenue' }],
  ['full-width digits', NYC, { ...NYC, line1: '３５０ Fifth Avenue' }],
  ['full-width digits in the postal code', NYC, { ...NYC, postal_code: '１０１１８' }],
  ['Arabic-Indic digits', NYC, { ...NYC, line1: '٣٥٠ Fifth Avenue' }],
  ['a zero-width space in the postal code', NYC, { ...NYC, postal_code: '101\u200B18' }],
  ['a unit number with a leading zero', NYC, { ...NYC, line2: 'Apt 04' }],
  // Their neighbours: other invisible characters, in-word punctuation, scripts and forms.
  ['a word joiner, a byte-order mark, bidi marks', NYC, { ...NYC, line1: '350 F\u2060if\uFEFFth Av\u200Een\u202Bue' }],
  ['zero-width joiners and a variation selector', NYC, { ...NYC, line1: '35\u200D0 Fi\u200Cfth\uFE0F Avenue' }],
  ['a combining grapheme joiner and a Hangul filler', NYC, { ...NYC, line1: '350 Fif\u034Fth Aven\u3164ue' }],
  ['a hyphen, an apostrophe, a space inside a word', NYC, { ...NYC, line1: '350 Fif-th Ave’nue', line2: 'A pt 4' }],
  [
    'Cyrillic and Greek lookalikes in capitals',
    NYC,
    { ...NYC, line1: '350 F\u0399FT\u041D \u0391V\u0415NU\u0415', line2: '\u0410\u0420T 4' },
  ],
  [
    'Cyrillic lookalikes in lower case',
    NYC,
    { ...NYC, line1: '350 F\u0456fth Av\u0435nu\u0435', line2: '\u0410\u0440t 4' },
  ],
  ['a dotless i and a Latin alpha', NYC, { ...NYC, line1: '350 F\u0131fth \u0251venue' }],
  ['full-width and mathematical letters', NYC, { ...NYC, line1: '350 Ｆｉｆｔｈ 𝐀𝐯𝐞𝐧𝐮𝐞' }],
  ['a ligature', NYC, { ...NYC, line1: '350 \uFB01fth Avenue' }],
  ['Devanagari and Persian digits', NYC, { ...NYC, line1: '३५० Fifth Avenue', line2: 'Apt ۴' }],
  ['a unit number written 004', NYC, { ...NYC, line2: 'Apt 004' }],
  ['ZIP+4 with a space, full-width digits', NYC, { ...NYC, postal_code: '１０１１８ ０００１' }],
  ['ZIP+4 in Arabic-Indic digits', NYC, { ...NYC, postal_code: '١٠١١٨-٠٠٠١' }],
  ['a ZIP with a letter O for a zero', NYC, { ...NYC, postal_code: '1O118' }],
  ['a ZIP+4 cut short', NYC, { ...NYC, postal_code: '10118-00' }],
  ['a ZIP with its country prefix', NYC, { ...NYC, postal_code: 'US 10118' }],
  ['a GB postcode without its space, in lower case', LONDON, { ...LONDON, postal_code: 'sw1a2aa' }],
  ['a GB postcode with a hyphen and two spaces', LONDON, { ...LONDON, postal_code: 'SW1A  -2AA' }],
  ['a GB postcode with I for 1', LONDON, { ...LONDON, postal_code: 'SWIA 2AA' }],
  ['a GB postcode with Greek capitals', LONDON, { ...LONDON, postal_code: 'SW1\u0391 2\u0391\u0391' }],
  ['a CA postal code without its space', OTTAWA, { ...OTTAWA, postal_code: 'k1m1m4' }],
  ['a CA postal code with a hyphen, full-width', OTTAWA, { ...OTTAWA, postal_code: 'Ｋ１Ｍ-１Ｍ４' }],
  ['a DE postal code with its old prefix', BERLIN, { ...BERLIN, postal_code: 'D-10117' }],
  ['a DE postal code split', BERLIN, { ...BERLIN, postal_code: '10 117' }],
  ['ss for ß', BERLIN, { ...BERLIN, line1: 'Friedrichstrasse 43' }],
  ['ß in capitals', BERLIN, { ...BERLIN, line1: 'FRIEDRICHSTRASSE 43' }],
  ['a house number with a leading zero', BERLIN, { ...BERLIN, line1: 'Friedrichstraße 043' }],
  ['a FR postal code with its country prefix', PARIS, { ...PARIS, postal_code: 'FR-75002' }],
  ['a NL postcode without its space, in lower case', AMSTERDAM, { ...AMSTERDAM, postal_code: '1012lg' }],
  ['a CA postal code with I for 1', OTTAWA, { ...OTTAWA, postal_code: 'K1M IM4' }],
  ['a NL postcode with its country prefix', AMSTERDAM, { ...AMSTERDAM, postal_code: 'NL-1012 LG' }],
  ['a NL postcode with a hyphen', AMSTERDAM, { ...AMSTERDAM, postal_code: '1012-LG' }],
  ['the country in lower case', PARIS, { ...PARIS, country: 'fr' }],
  ['without a postal code, the city in capitals', HONG_KONG, { ...HONG_KONG, city: 'CENTRAL ' }],
  ['without a postal code, a soft hyphen in the city', HONG_KONG, { ...HONG_KONG, city: 'Cen\u00ADtral' }],
];

const APART: Row[] = [
  ['Apt 4 and Apt 14', NYC, { ...NYC, line2: 'Apt 14' }],
  ['Apt 4 and Apt 40', NYC, { ...NYC, line2: 'Apt 40' }],
  ['Apt 4 and Apt 5', PARIS, { ...PARIS, line2: 'Apt 5' }],
  ['Apt 4 and Apt 4A', PARIS, { ...PARIS, line2: 'Apt 4A' }],
  ['Apt 4 and Apt 4 1', PARIS, { ...PARIS, line2: 'Apt 4 1' }],
  ['12 and 14 of one street', PARIS, { ...PARIS, line1: '14 Rue de la Paix' }],
  ['Main St 12 and Main St 21', { ...NYC, line1: 'Main St 12' }, { ...NYC, line1: 'Main St 21' }],
  ['12 Main St and 1 2 Main St', { ...NYC, line1: '12 Main St' }, { ...NYC, line1: '1 2 Main St' }],
  ['Unit 1, 23 and Unit 12, 3', { ...NYC, line1: 'Unit 1, 23 Main St' }, { ...NYC, line1: 'Unit 12, 3 Main St' }],
  ['Flat 1 and Flat I (a lettered flat)', { ...LONDON, line1: 'Flat 1' }, { ...LONDON, line1: 'Flat I' }],
  ['Flat 1 and Flat l', { ...LONDON, line1: 'Flat 1' }, { ...LONDON, line1: 'Flat l' }],
  ['Flat 0 and Flat O', { ...LONDON, line1: 'Flat 0' }, { ...LONDON, line1: 'Flat O' }],
  // Two real streets of one postal code: 75002 has both.
  ['Rue de la Paix and Rue de la Banque', PARIS, { ...PARIS, line1: '12 Rue de la Banque' }],
  // Latin letters a reader tells apart are never folded, even where Unicode's skeleton would (m → rn).
  ['Cam Road and Carn Road', { ...LONDON, line1: '5 Cam Road' }, { ...LONDON, line1: '5 Carn Road' }],
  ['Elm Street and Eim Street', { ...LONDON, line1: '5 Elm Street' }, { ...LONDON, line1: '5 Eim Street' }],
  // A genuine non-Latin address keeps the letters that have no Latin lookalike.
  [
    'two streets of Athens',
    { ...PARIS, line1: 'Οδός Ερμού 10', country: 'GR', postal_code: '10563' },
    { ...PARIS, line1: 'Οδός Αιόλου 10', country: 'GR', postal_code: '10563' },
  ],
  ['ZIP 10118 and 10119', NYC, { ...NYC, postal_code: '10119' }],
  ['ZIP+4 of another ZIP', NYC, { ...NYC, postal_code: '10119-0001' }],
  ['a US ZIP with its leading zero', { ...NYC, postal_code: '02118' }, { ...NYC, postal_code: '2118' }],
  ['GB postcodes a letter apart', LONDON, { ...LONDON, postal_code: 'SW1A 2AB' }],
  ['CA postal codes a digit apart', OTTAWA, { ...OTTAWA, postal_code: 'K1M 1M5' }],
  ['NL postcodes a letter apart', AMSTERDAM, { ...AMSTERDAM, postal_code: '1012 LH' }],
  ['DE postal codes a digit apart', BERLIN, { ...BERLIN, postal_code: '10115' }],
  ['FR postal codes a digit apart', PARIS, { ...PARIS, postal_code: '75001' }],
  ['another country', PARIS, { ...PARIS, country: 'BE' }],
  ['without a postal code, another city', HONG_KONG, { ...HONG_KONG, city: 'Admiralty' }],
];

for (const [what, base, written] of SAME) {
  test(`one address: ${what}`, (t) => {
    t.is(addressKey(written), addressKey(base), `${normaliseAddress(written)} vs ${normaliseAddress(base)}`);
  });
}

for (const [what, base, written] of APART) {
  test(`two addresses: ${what}`, (t) => {
    t.not(addressKey(written), addressKey(base), normaliseAddress(written));
  });
}

test('the key is the SHA-256 of the normalised form, which names the country, the postal code and the street', (t) => {
  t.is(normaliseAddress(PARIS), 'FR|75002||12ruedelapaixapt4');
  t.is(normaliseAddress({ ...NYC, postal_code: '10118-0001' }), 'US|10118||350fifthavenueapt4');
  t.is(normaliseAddress(LONDON), 'GB|SW1A 2AA||10downingstreet');
  t.is(normaliseAddress(OTTAWA), 'CA|K1M 1M4||24sussexdrive');
  t.is(normaliseAddress(AMSTERDAM), 'NL|1012 LG||damrak1');
  t.is(normaliseAddress(HONG_KONG), 'HK||central|hongkong|1queensroad');
  t.is(addressKey(PARIS), createHash('sha256').update(normaliseAddress(PARIS)).digest('hex'));
  t.regex(addressKey(HONG_KONG), /^[0-9a-f]{64}$/);
});

test('what the rule does not catch: another word for the unit, abbreviations, transliteration', (t) => {
  // Documented limits: "#4" or "Appartement 4" for "Apt 4", "Ave" for "Avenue", a Latin transliteration
  // of a Cyrillic name, a letter O inside a number.
  t.not(addressKey({ ...PARIS, line2: '#4' }), addressKey(PARIS));
  t.not(addressKey({ ...PARIS, line2: 'Appartement 4' }), addressKey(PARIS));
  t.not(addressKey({ ...NYC, line1: '350 Fifth Ave' }), addressKey(NYC));
  const moscow = { line1: 'Тверская 1', city: 'Москва', postal_code: '125009', country: 'RU' };
  t.not(addressKey({ ...moscow, line1: 'Tverskaya 1' }), addressKey(moscow));
  t.not(addressKey({ ...NYC, line2: 'Apt 1O' }), addressKey({ ...NYC, line2: 'Apt 10' }));
  // The key ignores case, so a letter is folded by its small form: Greek ν reads v, so its capital Ν
  // (which reads N) is a v.
  t.not(addressKey({ ...NYC, line1: '350 FIFTH AVE\u039DUE' }), addressKey(NYC));
});

test('a non-Latin address is one address in capitals and in small letters', (t) => {
  const athens = { line1: 'Οδός Ερμού 10', city: 'Αθήνα', postal_code: '105 63', country: 'GR' };
  t.is(addressKey({ ...athens, line1: 'ΟΔΟΣ ΕΡΜΟΥ 10' }), addressKey(athens));
  const moscow = { line1: 'Тверская улица, дом 1', city: 'Москва', postal_code: '125009', country: 'RU' };
  t.is(addressKey({ ...moscow, line1: 'ТВЕРСКАЯ УЛИЦА ДОМ 1' }), addressKey(moscow));
  t.not(addressKey({ ...moscow, line1: 'Тверская улица, дом 7' }), addressKey(moscow));
});
