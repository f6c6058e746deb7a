import test from 'ava';
import { instantOf } from '../../../api/validate';

test('an ISO-8601 time names the instant it says, with or without seconds, in any offset Postgres stores', (t) => {
  t.is(instantOf('2025-11-28T09:00:00Z')?.toISOString(), '2025-11-28T09:00:00.000Z');
  t.is(instantOf('2025-11-28T09:00Z')?.toISOString(), '2025-11-28T09:00:00.000Z');
  t.is(instantOf('2025-11-28T09:00:00.123456789+01:00')?.toISOString(), '2025-11-28T08:00:00.123Z');
  t.is(instantOf('2032-02-29T23:59:59-15:59')?.toISOString(), '2032-03-01T15:58:59.000Z');
  t.is(instantOf('0001-01-01T00:00:00Z')?.getUTCFullYear(), 1);
});

test('a time that is no real time is refused, where Date would roll it on', (t) => {
  for (const text of [
    '2031-02-29T09:00:00Z', // not a leap year
    '2031-04-31T09:00:00Z',
    '2031-13-01T09:00:00Z',
    '2031-00-10T09:00:00Z',
    '2031-01-00T09:00:00Z',
    '0000-01-01T00:00:00Z',
    '2031-01-01T24:00:00Z',
    '2031-01-01T12:60:00Z',
    '2031-01-01T12:00:60Z',
    '2031-01-01T00:00:00+16:00',
    '2031-01-01T00:00:00+01:60',
    '2031-01-01 00:00:00Z',
    '2031-01-01T00:00:00',
  ])
    t.is(instantOf(text), undefined, text);
});
