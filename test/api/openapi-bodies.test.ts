import test from 'ava';
import { STRIPE_MIN_CHARGE } from '../../vocabulary/limits';
import { ADMIN_TOKEN, ajv, doc, requestSchema, schemaOf, serveApp, SUPPORT_TOKEN } from '../helpers/openapi';

let app: Awaited<ReturnType<typeof serveApp>>;
test.before(async () => {
  app = await serveApp();
});
test.after.always(async () => {
  await app?.close();
});

// The documented request bodies against the routes' own validators: each variant of a valid body
// (every field at, below and above its bounds, the wrong type, null, missing, an unknown field) must
// be refused by the route (400 invalid-request) exactly when the documented schema refuses it.

function candidates(schema: Record<string, any>): unknown[] {
  const types: string[] = [schema.type].flat().filter((x) => x !== 'null');
  const values: unknown[] = [null, true, 'x', 7, 1.5, {}, []];
  switch (types[0]) {
    case 'integer':
    case 'number': {
      for (const bound of [schema.minimum, schema.maximum, schema.exclusiveMinimum, schema.exclusiveMaximum]) {
        if (typeof bound === 'number') values.push(bound - 1, bound, bound + 0.5, bound + 1);
      }
      values.push(0, -1, '1');
      break;
    }
    case 'string': {
      const max = schema.maxLength ?? 8;
      values.push(
        '',
        'a',
        'aB3',
        'a'.repeat(max),
        'a'.repeat(max + 1),
        '-a',
        'a.b_c-d',
        'a b',
        'é',
        'a\u0000b',
        'a\u001fb',
      );
      break;
    }
    case 'boolean':
      values.push(false, 'true', 0);
      break;
    case 'array': {
      const item = schema.items?.maxLength ?? 8;
      values.push(['a'], ['a', 'b'], ['a', 'a'], [''], ['a'.repeat(item)], ['a'.repeat(item + 1)], [7], 'a');
      break;
    }
  }
  return values;
}

function variants(schema: Record<string, any>, base: Record<string, unknown>, nested: Record<string, object> = {}) {
  const out: Record<string, unknown>[] = [{ ...base, unknownField: 1 }];
  for (const [name, prop] of Object.entries<Record<string, any>>(schema.properties ?? {})) {
    const without = { ...base };
    delete without[name];
    out.push(without);
    for (const value of candidates(prop)) out.push({ ...base, [name]: value });
    const inner = nested[name] as Record<string, unknown> | undefined;
    if (inner) for (const v of variants(prop, inner)) out.push({ ...base, [name]: v });
  }
  return out;
}

async function post(p: string, body: unknown, headers: Record<string, string>) {
  const res = await fetch(`${app.baseUrl}${p}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as { type: string; errors?: { field: string }[] } };
}

interface BodyCase {
  route: string;
  /** Where to send it (path parameters filled in) and where the document describes it. */
  path: string;
  docPath: string;
  headers: Record<string, string>;
  /** A body the route accepts; the variants are made from it. */
  base: Record<string, unknown>;
  /** Valid values of object fields, to vary their own fields too. */
  nested?: Record<string, object>;
}

const bodyCases: BodyCase[] = [
  {
    route: 'POST /v1/products',
    path: '/v1/products',
    docPath: '/v1/products',
    headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
    base: { sku: 'runner-42', name: 'Runner', priceCents: 12900, currency: 'eur', stock: 1 },
    nested: { waitingRoom: { admitPerSecond: 5, maxActive: 10 } },
  },
  {
    route: 'POST /v1/products/{sku}/restock',
    path: '/v1/products/runner-42/restock',
    docPath: '/v1/products/{sku}/restock',
    headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
    base: { quantity: 5 },
  },
  {
    route: 'POST /v1/purchases',
    path: '/v1/purchases',
    docPath: '/v1/purchases',
    headers: { 'idempotency-key': 'openapi-test-key', authorization: 'Bearer openapi-alice' },
    base: { sku: 'runner-42', buyerId: 'alice' },
  },
  {
    route: 'POST /v1/support/purchases/{id}/refund',
    path: '/v1/support/purchases/pur_0/refund',
    docPath: '/v1/support/purchases/{id}/refund',
    headers: { authorization: `Bearer ${SUPPORT_TOKEN}` },
    base: { reason: 'damaged box', restock: true },
  },
];

for (const c of bodyCases) {
  test(`${c.route}: the documented body schema accepts exactly what the route accepts`, async (t) => {
    const schema = requestSchema(c.docPath, 'post');
    const check = schemaOf(schema);
    t.true(check(c.base), `the base body is valid: ${ajv.errorsText(check.errors)}`);
    const bodies = variants(schema, c.base, c.nested);
    let accepted = 0;
    for (const body of bodies) {
      // A product of units must have as much stock as units (a rule beyond the schema).
      if (Array.isArray(body.units)) body.stock = body.units.length;
      const documented = check(structuredClone(body));
      // Stripe's smallest charge, by currency (a rule beyond the schema, which cannot say it per currency).
      const belowMinimum =
        typeof body.priceCents === 'number' &&
        typeof body.currency === 'string' &&
        body.priceCents < (STRIPE_MIN_CHARGE[body.currency.toLowerCase()] ?? 0);
      // A currency that is no ISO 4217 code (a rule beyond the schema's three letters).
      const noCurrency =
        typeof body.currency === 'string' &&
        /^[A-Za-z]{3}$/.test(body.currency) &&
        !Intl.supportedValuesOf('currency').includes(body.currency.toUpperCase());
      const res = await post(c.path, body, c.headers);
      const refused = res.status === 400 && res.body.type === 'invalid-request';
      const what = `${JSON.stringify(body)} -> ${res.status} ${JSON.stringify(res.body)}`;
      t.is(refused, !documented || belowMinimum || noCurrency, what);
      if (documented && !belowMinimum && !noCurrency) accepted++;
    }
    t.true(accepted > 1, 'some variants were valid');
    t.true(bodies.length - accepted > 5, 'some variants were refused');
  });
}

test('POST /v1/purchases refuses a missing or too long Idempotency-Key, as documented', async (t) => {
  const key = doc.components.parameters.IdempotencyKey;
  t.true(key.required);
  const body = { sku: 'runner-42' };
  const alice = { authorization: 'Bearer openapi-alice' };
  t.is((await post('/v1/purchases', body, alice)).status, 400);
  const tooLong = { ...alice, 'idempotency-key': 'k'.repeat(key.schema.maxLength + 1) };
  t.is((await post('/v1/purchases', body, tooLong)).status, 400);
  const longest = { ...alice, 'idempotency-key': 'k'.repeat(key.schema.maxLength) };
  t.not((await post('/v1/purchases', body, longest)).status, 400);
});

test('POST /v1/products refuses three letters that name no currency, naming currency', async (t) => {
  const base = { sku: 'runner-42', name: 'Runner', priceCents: 12900, stock: 1 };
  const admin = { authorization: `Bearer ${ADMIN_TOKEN}` };
  for (const currency of ['eru', 'XXQ']) {
    const res = await post('/v1/products', { ...base, currency }, admin);
    t.is(res.status, 400, currency);
    t.deepEqual(
      res.body.errors?.map((e) => e.field),
      ['currency'],
    );
  }
});
