import test from 'ava';
import { addressKey, normaliseAddress } from '../../store/addresses';

// The per-address limit's rule (docs/architecture.md, "The per-address limit"): what counts as one address.

const base = { line1: '12 Rue de la Paix', line2: 'Apt 4', city: 'Paris', postal_code: '75002', country: 'FR' };

test('case, spacing, punctuation, accents and the split between the two lines make no difference', (t) => {
  const same = [
    { ...base, line1: '12 RUE DE LA PAIX', city: 'paris' },
    { ...base, line1: '  12   rue de la  paix ', line2: ' apt   4' },
    { ...base, line1: '12, Rue-de-la-Paix.', line2: 'Apt. 4' },
    { ...base, line1: '12 Rue de la Paix Apt 4', line2: null },
    { ...base, line1: '12 Rüe de la Paix' },
    { ...base, postal_code: '75 002', country: 'fr' },
    // With a postal code, the city and state are named by it: an abbreviation there is the same address.
    { ...base, city: 'Paris 2e', state: 'Île-de-France' },
  ];
  for (const a of same) t.is(addressKey(a), addressKey(base), JSON.stringify(a));
  t.is(normaliseAddress(base), 'FR|75002||12 rue de la paix apt 4');
});

test('another number, street, postal code or country is another address', (t) => {
  for (const a of [
    { ...base, line2: 'Apt 5' },
    { ...base, line1: '14 Rue de la Paix' },
    { ...base, postal_code: '75001' },
    { ...base, country: 'BE' },
  ]) {
    t.not(addressKey(a), addressKey(base), JSON.stringify(a));
  }
});

test('what the rule does not catch: another way of writing the unit or an abbreviation', (t) => {
  // Documented limits: "#4" or "Appartement 4" for "Apt 4", "St" for "Street" are other keys.
  t.not(addressKey({ ...base, line2: '#4' }), addressKey(base));
  t.not(addressKey({ ...base, line2: 'Appartement 4' }), addressKey(base));
  const street = { ...base, line1: '1 Main Street', country: 'US', postal_code: '10001' };
  t.not(addressKey({ ...street, line1: '1 Main St' }), addressKey(street));
});

test('without a postal code the city and state are part of the address', (t) => {
  const hk = { line1: '1 Queen’s Road', city: 'Central', state: 'Hong Kong', country: 'HK' };
  t.not(addressKey({ ...hk, city: 'Admiralty' }), addressKey(hk));
  t.is(addressKey({ ...hk, city: 'CENTRAL ' }), addressKey(hk));
  t.regex(addressKey(hk), /^[0-9a-f]{64}$/);
});
