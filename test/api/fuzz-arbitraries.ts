import { fc } from '@fast-check/ava';

// fast-check arbitraries for the fuzz suite (test/api/fuzz.test.ts): JSON values from the request
// schemas of docs/openapi.json, and the mutations a careless or hostile client makes of them.

type Schema = Record<string, any>;

/** Marks a number that JSON.stringify cannot write (1e400, 9007199254740993): `toJson` puts it in raw. */
const RAW = '\u0001raw:';
export const rawNumber = (literal: string) => `${RAW}${literal}`;

/** A body as text: JSON.stringify (lone surrogates come out as `\ud800`), raw number literals put back. */
export function toJson(value: unknown): string {
  return (JSON.stringify(value) ?? '').replace(/"\\u0001raw:([^"]*)"/g, '$1');
}

/** Strings that have broken things before: NUL, lone surrogates, C0/C1 controls, very long, odd Unicode. */
export const nastyStrings = fc.constantFrom(
  '\u0000',
  'a\u0000b',
  '\ud800',
  'x\udfffy',
  '\udc00\ud800',
  '\u007f',
  '\u0085',
  '\t',
  'line\nbreak',
  '\u001b[31m',
  '',
  ' ',
  'é',
  '😀',
  '\u202e',
  '\ufeff',
  '%00',
  "' OR 1=1 --",
  '\\',
  '"',
  'a'.repeat(65),
  'a'.repeat(129),
  'a'.repeat(501),
  'x'.repeat(10_000),
);

const anyUnit = fc.integer({ min: 0, max: 0xffff }).map((c) => String.fromCharCode(c));
/** Any UTF-16 string, lone surrogates and controls included. */
export const anyString = fc.oneof(fc.string(), fc.string({ unit: anyUnit, maxLength: 40 }), nastyStrings);

export const hugeNumbers = fc.constantFrom<unknown>(
  2 ** 31 - 1,
  2 ** 31,
  2 ** 32,
  -(2 ** 31) - 1,
  Number.MAX_SAFE_INTEGER,
  1e21,
  -1,
  -0,
  0.5,
  1e308,
  -1e308,
  5e-324,
  rawNumber('1e400'),
  rawNumber('-1e400'),
  rawNumber('9007199254740993'),
  rawNumber('1' + '0'.repeat(400)),
);

/** `depth` arrays or objects inside one another around `leaf`. */
export function nest(depth: number, leaf: unknown = 1, asObject = false): unknown {
  let v = leaf;
  for (let i = 0; i < depth; i++) v = asObject ? { a: v } : [v];
  return v;
}

/** Any JSON value, wrong types for any field included. */
export const wrongValue: fc.Arbitrary<unknown> = fc.oneof(
  fc.jsonValue({ maxDepth: 3 }),
  hugeNumbers,
  anyString,
  fc.constantFrom<unknown>(null, true, false, [], {}, [null], { '\u0000': 1 }, { '\ud800': 'x' }),
  fc.integer({ min: 30, max: 40 }).map((d) => nest(d)),
);

function resolve(schema: Schema, doc: Schema): Schema {
  if (typeof schema.$ref !== 'string') return schema;
  const node = schema.$ref
    .slice(2)
    .split('/')
    .reduce((n: Schema, k: string) => n[k], doc);
  return resolve(node, doc);
}

function numberFor(s: Schema, integer: boolean): fc.Arbitrary<unknown> {
  const min = s.minimum ?? (s.exclusiveMinimum !== undefined ? s.exclusiveMinimum + 1 : -1000);
  const max = s.maximum ?? (s.exclusiveMaximum !== undefined ? s.exclusiveMaximum - 1 : 1_000_000);
  const inRange = integer
    ? fc.integer({ min: Math.ceil(min), max: Math.floor(max) })
    : fc.double({ min, max, noNaN: true, noDefaultInfinity: true });
  const bounds = [min, max, min - 1, max + 1, 0, 1].filter((n) => Number.isFinite(n));
  return fc.oneof({ weight: 8, arbitrary: inRange }, { weight: 1, arbitrary: fc.constantFrom(...bounds) });
}

function stringFor(s: Schema): fc.Arbitrary<unknown> {
  const maxLength = s.maxLength ?? 64;
  const valid =
    s.pattern && /^\^\[[A-Za-z0-9]/.test(s.pattern)
      ? fc.stringMatching(new RegExp(s.pattern))
      : fc.string({ minLength: s.minLength ?? 0, maxLength: Math.min(maxLength, 40) });
  return fc.oneof(
    { weight: 8, arbitrary: valid },
    { weight: 1, arbitrary: fc.constant('a'.repeat(maxLength)) },
    { weight: 2, arbitrary: anyString },
  );
}

/** Values of `schema` (most of them valid, some at or beyond its bounds), resolved against `doc`. */
export function valueFor(schema: Schema, doc: Schema): fc.Arbitrary<unknown> {
  const s = resolve(schema, doc);
  const types: string[] = [s.type ?? 'object'].flat();
  const type = types.find((t) => t !== 'null') ?? 'null';
  let arb: fc.Arbitrary<unknown>;
  if (s.enum) arb = fc.constantFrom(...(s.enum as unknown[]));
  else if (type === 'object') {
    const props = Object.entries<Schema>(s.properties ?? {});
    const required = new Set<string>(s.required ?? []);
    const record = Object.fromEntries(props.map(([k, v]) => [k, valueFor(v, doc)]));
    arb = props.length
      ? fc.record(record, { requiredKeys: props.map(([k]) => k).filter((k) => required.has(k)) })
      : fc.dictionary(fc.string({ maxLength: 8 }), fc.jsonValue({ maxDepth: 2 }), { maxKeys: 4 });
  } else if (type === 'array') {
    arb = fc.array(valueFor(s.items ?? {}, doc), { minLength: s.minItems ?? 0, maxLength: 5 });
  } else if (type === 'integer' || type === 'number') arb = numberFor(s, type === 'integer');
  else if (type === 'string') arb = stringFor(s);
  else if (type === 'boolean') arb = fc.boolean();
  else arb = fc.constant(null);
  return types.includes('null')
    ? fc.oneof({ weight: 5, arbitrary: arb }, { weight: 1, arbitrary: fc.constant(null) })
    : arb;
}

/** A body of `schema`, then maybe mutated: a field of the wrong type, a field dropped, an extra one, nested deep, or no object at all. */
export function bodyFor(schema: Schema, doc: Schema): fc.Arbitrary<unknown> {
  const base = valueFor(schema, doc);
  const field = (v: unknown) => Object.keys((v as object) ?? {});
  return fc.oneof(
    { weight: 6, arbitrary: base },
    {
      weight: 3,
      arbitrary: fc
        .tuple(base, fc.nat(), wrongValue)
        .map(([v, i, w]) => (field(v).length ? { ...(v as object), [field(v)[i % field(v).length]]: w } : w)),
    },
    {
      weight: 1,
      arbitrary: fc.tuple(base, fc.nat()).map(([v, i]) => {
        const copy = { ...(v as Record<string, unknown>) };
        delete copy[field(v)[i % Math.max(1, field(v).length)]];
        return copy;
      }),
    },
    { weight: 1, arbitrary: fc.tuple(base, anyString, wrongValue).map(([v, k, w]) => ({ ...(v as object), [k]: w })) },
    { weight: 1, arbitrary: fc.tuple(base, fc.integer({ min: 25, max: 40 })).map(([v, d]) => nest(d, v, true)) },
    { weight: 1, arbitrary: wrongValue },
  );
}

/** The bytes of a body: its JSON mostly; sometimes broken JSON, invalid UTF-8, or nothing. */
export function bytesFor(body: fc.Arbitrary<unknown>): fc.Arbitrary<Buffer | undefined> {
  return fc.oneof(
    { weight: 12, arbitrary: body.map((v) => Buffer.from(toJson(v))) },
    { weight: 1, arbitrary: body.map((v) => Buffer.from(toJson(v).slice(0, -1))) },
    { weight: 1, arbitrary: fc.constant(Buffer.from([0x7b, 0x22, 0xff, 0xfe, 0x22, 0x3a, 0x31, 0x7d])) },
    { weight: 1, arbitrary: fc.constantFrom(undefined, Buffer.alloc(0), Buffer.from('not json'), Buffer.from('[]')) },
  );
}

/** Path parameter values: the given good ones, random text percent-encoded, and the known breakers. */
export function paramFor(good: string[]): fc.Arbitrary<string> {
  return fc.oneof(
    { weight: 4, arbitrary: fc.constantFrom(...good).map(encodeURIComponent) },
    { weight: 3, arbitrary: fc.string({ minLength: 1, maxLength: 40 }).map(encodeURIComponent) },
    {
      weight: 3,
      arbitrary: fc.constantFrom(
        '%00',
        '%ED%A0%80',
        '%ED%B0%80',
        '%FF',
        '%E0%A4%A',
        '%',
        '%2F',
        '%C3%A9',
        '%F0%9F%98%80',
        '%7F',
        '%C2%85',
        '..',
        'a%20b',
        '\u00ed\u00a0\u0080',
        'é',
        'a'.repeat(257),
        'a'.repeat(5000),
        encodeURIComponent('x'.repeat(300)),
      ),
    },
  );
}

/** Idempotency-Key values: good ones, the longest, one too long, a tab, Latin-1, random printable. */
export const idempotencyKey = fc.oneof(
  fc.uuid(),
  fc.constantFrom('k', 'a'.repeat(255), 'a'.repeat(256), 'a\tb', '\u00e9t\u00e9', 'key with spaces'),
  fc.string({ unit: fc.integer({ min: 0x21, max: 0x7e }).map((c) => String.fromCharCode(c)), minLength: 1 }),
);

/** Content-Type values: mostly JSON, sometimes not, or with an odd charset. */
export const contentType = fc.oneof(
  { weight: 14, arbitrary: fc.constant('application/json') },
  {
    weight: 2,
    arbitrary: fc.constantFrom(
      undefined,
      'text/plain',
      'application/json; charset=utf-8',
      'application/json; charset=latin1',
      'application/json; charset=bogus',
      'application/x-www-form-urlencoded',
      'multipart/form-data; boundary=x',
      'application/vnd.api+json',
      '*/*',
      'garbage',
    ),
  },
);

const someId = (prefix: string) =>
  fc.oneof(
    fc.string({ unit: fc.constantFrom(...'0123456789abcdefABCDEF'), minLength: 1 }).map((x) => `${prefix}${x}`),
    anyString,
  );
const ours = fc.oneof(fc.constant('PURCHASE'), anyString);

/** The fields of `data.object` the webhook route reads, typed as Stripe sends them (mostly). */
const eventObject = fc.record(
  {
    id: someId('cs_test_'),
    object: fc.constantFrom('checkout.session', 'payment_intent', 'refund', 'charge', 'dispute'),
    metadata: fc.record(
      { purchase_id: ours, refund_step: fc.constantFrom('late', 'support', 'stray', 'x'), session_id: someId('cs_') },
      { requiredKeys: [] },
    ),
    client_reference_id: ours,
    payment_intent: fc.oneof(
      someId('pi_'),
      someId('pi_').map((id) => ({ id })),
    ),
    payment_status: fc.constantFrom('paid', 'unpaid', 'no_payment_required'),
    amount_total: fc.oneof(fc.integer({ min: 0, max: 100_000_000 }), fc.constant(-1)),
    amount: fc.integer({ min: -1, max: 100_000_000 }),
    currency: fc.oneof(fc.constantFrom('usd', 'eur'), anyString),
    status: fc.oneof(fc.constantFrom('succeeded', 'failed', 'pending', 'won', 'lost'), anyString),
    failure_reason: anyString,
    reason: anyString,
    refunded: fc.boolean(),
  },
  { requiredKeys: [] },
);

/** Stripe events, typed as Stripe sends them mostly; `PURCHASE` stands for a purchase of the test's. */
export const stripeEvent = fc.record(
  {
    id: someId('evt_'),
    object: fc.constant('event'),
    created: fc.oneof(
      { weight: 8, arbitrary: fc.integer({ min: 1_500_000_000, max: 2_000_000_000 }) },
      { weight: 1, arbitrary: wrongValue },
    ),
    type: fc.oneof(
      {
        weight: 5,
        arbitrary: fc.constantFrom(
          'checkout.session.completed',
          'checkout.session.expired',
          'checkout.session.async_payment_succeeded',
          'checkout.session.async_payment_failed',
          'payment_intent.payment_failed',
          'refund.updated',
          'refund.failed',
          'charge.refunded',
          'charge.dispute.created',
          'charge.dispute.closed',
          'customer.created',
        ),
      },
      { weight: 1, arbitrary: anyString },
    ),
    livemode: fc.oneof({ weight: 5, arbitrary: fc.constant(false) }, { weight: 1, arbitrary: wrongValue }),
    data: fc.oneof(
      { weight: 5, arbitrary: fc.record({ object: eventObject }) },
      { weight: 1, arbitrary: fc.record({ object: fc.dictionary(fc.string(), wrongValue) }) },
      { weight: 1, arbitrary: wrongValue },
    ),
  },
  { requiredKeys: ['id', 'type', 'created'] },
);
