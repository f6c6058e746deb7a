import fs from 'node:fs';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import type { Router } from '@koa/router';
import Ajv2020, { type ValidateFunction } from 'ajv/dist/2020';
import test from 'ava';
import { parseDocument } from 'yaml';
import type Koa from 'koa';
import { createApp } from '../../api/app';
import { CHECKOUT_METHOD_TYPES } from '../../store/rules/accepted-payment-methods';
import type { ApiDeps } from '../../api/deps';
import { BadBuyerToken } from '../../config/buyer-tokens';
import { createLogger } from '../../config/log';
import { createMetrics } from '../../api/metrics';
import { Lifecycle } from '../../api/shutdown';
import { PROBLEM_TYPES } from '../../api/problem';
import { STRIPE_MIN_CHARGE } from '../../vocabulary/limits';
import type { Db } from '../../store/db';
import type { Gate } from '../../store/gate';

// docs/openapi.json against the app as it is built: a valid OpenAPI 3.1 document, exactly the
// routes the routers register, the request bodies the routes' own validators accept, and the same
// bytes at GET /openapi.json. No route here reaches Postgres or Temporal: the app gets placeholder
// dependencies that throw if anything calls them.

const DOC_PATH = path.join(__dirname, '../../docs/openapi.json');
const doc = JSON.parse(fs.readFileSync(DOC_PATH, 'utf8'));

const ADMIN_TOKEN = 'openapi-test-admin';
const SUPPORT_TOKEN = 'openapi-test-support';
const HTTP_METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'] as const;

/** Stands in for a client the routes are built with: any call on it fails (none should happen before a body is valid). */
function placeholder(name: string): unknown {
  return new Proxy(function () {}, {
    get: (_target, prop) => (prop === 'then' ? undefined : placeholder(`${name}.${String(prop)}`)),
    apply: () => {
      throw new Error(`${name}() called: this test only builds the routes`);
    },
  });
}

function placeholderDeps(): ApiDeps {
  const known: Partial<ApiDeps> = {
    adminToken: ADMIN_TOKEN,
    supportToken: SUPPORT_TOKEN,
    webhookSecret: 'whsec_openapi_test',
    livemode: false,
    // Only the token `openapi-alice` is a buyer (alice): this test is about request shapes, not tokens.
    buyers: {
      verify: (token: string) =>
        token === 'openapi-alice' ? Promise.resolve('alice') : Promise.reject(new BadBuyerToken('unknown token')),
    },
    rateLimits: undefined,
    trustedProxies: [],
    taskQueue: 'openapi-test',
    purchaseTimeoutMs: 1000,
    lifecycle: new Lifecycle(),
    logger: createLogger('test', { LOG_LEVEL: 'silent' }),
    // Metrics are real (the access log observes every request); nothing here scrapes them.
    metrics: createMetrics(placeholder('deps.db') as Db, placeholder('gate') as Gate),
  };
  return new Proxy(known, {
    get: (target, prop: string) => (prop in target ? target[prop as keyof ApiDeps] : placeholder(`deps.${prop}`)),
  }) as ApiDeps;
}

/** Every `METHOD /path` the app's routers register, in OpenAPI's path syntax (`:id` → `{id}`). */
function registeredRoutes(app: Koa): string[] {
  const routers = app.middleware
    .map((m) => (m as Koa.Middleware & { router?: Router }).router)
    .filter((r): r is Router => r !== undefined);
  const routes = new Set<string>();
  for (const router of routers) {
    for (const layer of router.stack) {
      if (typeof layer.path !== 'string') throw new Error(`a route with a non-string path: ${String(layer.path)}`);
      // koa-router adds HEAD to every GET by itself; router.use() layers have no methods.
      for (const method of layer.methods.filter((m) => m !== 'HEAD')) {
        routes.add(`${method} ${layer.path.replace(/:([A-Za-z0-9_]+)/g, '{$1}')}`);
      }
    }
  }
  return [...routes].sort();
}

function documentedRoutes(): string[] {
  const routes: string[] = [];
  for (const [p, item] of Object.entries<Record<string, unknown>>(doc.paths)) {
    for (const method of HTTP_METHODS) if (item[method]) routes.push(`${method.toUpperCase()} ${p}`);
  }
  return routes.sort();
}

/** Follows a local JSON pointer (`#/components/schemas/Product`). */
function resolvePointer(ref: string): unknown {
  if (!ref.startsWith('#/')) throw new Error(`not a local reference: ${ref}`);
  return ref
    .slice(2)
    .split('/')
    .map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'))
    .reduce<unknown>((node, key) => (node as Record<string, unknown> | undefined)?.[key], doc);
}

function* walk(node: unknown, at = '#'): Generator<[string, Record<string, unknown>]> {
  if (node === null || typeof node !== 'object') return;
  yield [at, node as Record<string, unknown>];
  for (const [k, v] of Object.entries(node)) yield* walk(v, `${at}/${k}`);
}

interface MediaType {
  schema?: Record<string, unknown>;
  example?: unknown;
  examples?: Record<string, { value: unknown }>;
}

/** Every request and response body the document describes (responses by `$ref` once, where they are defined). */
function* mediaTypes(): Generator<[string, MediaType]> {
  const contents: [string, Record<string, MediaType> | undefined][] = [];
  for (const [name, r] of Object.entries<any>(doc.components.responses ?? {})) {
    contents.push([`responses ${name}`, r.content]);
  }
  for (const [p, item] of Object.entries<Record<string, any>>(doc.paths)) {
    for (const method of HTTP_METHODS) {
      const op = item[method];
      if (!op) continue;
      const where = `${method.toUpperCase()} ${p}`;
      contents.push([`${where} request`, op.requestBody?.content]);
      for (const [status, r] of Object.entries<any>(op.responses)) contents.push([`${where} ${status}`, r.content]);
    }
  }
  for (const [where, content] of contents) {
    for (const [type, media] of Object.entries(content ?? {})) yield [`${where} ${type}`, media];
  }
}

/** JSON Schema 2020-12 (OpenAPI 3.1's dialect) over the document's components, `$ref`s rewritten to `$defs`. */
const ajv = new Ajv2020({ strict: true, allErrors: true, validateFormats: false });
const defs = JSON.parse(
  JSON.stringify(doc.components.schemas).replace(/"#\/components\/schemas\//g, '"#/$defs/'),
) as Record<string, unknown>;
ajv.addSchema({ $id: 'openapi-components', $defs: defs });
function schemaOf(schema: Record<string, unknown>): ValidateFunction {
  const rewritten = JSON.parse(
    JSON.stringify(schema).replace(/"#\/components\/schemas\//g, '"openapi-components#/$defs/'),
  );
  return ajv.compile(rewritten);
}
function requestSchema(pathName: string, method: string): Record<string, unknown> {
  const op = doc.paths[pathName][method];
  let schema = op.requestBody.content['application/json'].schema as Record<string, unknown>;
  if (typeof schema.$ref === 'string') schema = resolvePointer(schema.$ref) as Record<string, unknown>;
  return schema;
}

let server: Server;
let baseUrl: string;
test.before(async () => {
  server = createApp(placeholderDeps()).listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
test.after.always(async () => {
  await new Promise((resolve) => server?.close(resolve));
});

test('the document is valid OpenAPI 3.1', async (t) => {
  // ESM-only package; this test file is CommonJS.
  const { Validator } = await import('@seriousme/openapi-schema-validator');
  const validator = new Validator();
  const result = await validator.validate(doc);
  t.deepEqual(result.errors, undefined, JSON.stringify(result.errors, null, 2));
  t.true(result.valid);
  t.is(validator.version, '3.1');
  t.regex(doc.openapi, /^3\.1\.\d+$/);
});

test('the document lists the payment method types POST /v1/products takes, every one', (t) => {
  const lists: unknown[] = [];
  JSON.stringify(doc, (_key, v: unknown) => {
    if (v && typeof v === 'object' && Array.isArray((v as { enum?: unknown[] }).enum)) {
      const values = (v as { enum: unknown[] }).enum;
      if (values.includes('sepa_debit')) lists.push(values);
    }
    return v;
  });
  t.true(lists.length > 0);
  for (const list of lists) t.deepEqual(list, [...CHECKOUT_METHOD_TYPES]);
});

test('every $ref resolves, every path parameter is declared, operation ids are unique', (t) => {
  for (const [at, node] of walk(doc)) {
    if (typeof node.$ref === 'string') t.not(resolvePointer(node.$ref), undefined, `${at}: ${node.$ref} resolves`);
  }
  const ids = new Set<string>();
  for (const [p, item] of Object.entries<Record<string, any>>(doc.paths)) {
    const fromTemplate = [...p.matchAll(/\{([^}]+)\}/g)].map((m) => m[1]).sort();
    for (const method of HTTP_METHODS) {
      const op = item[method];
      if (!op) continue;
      t.false(ids.has(op.operationId), `operationId ${op.operationId} is unique`);
      ids.add(op.operationId);
      const params = [...(item.parameters ?? []), ...(op.parameters ?? [])].map((prm: any) =>
        prm.$ref ? resolvePointer(prm.$ref) : prm,
      );
      const declared = params
        .filter((prm: any) => prm.in === 'path')
        .map((prm: any) => prm.name)
        .sort();
      t.deepEqual(declared, fromTemplate, `${method.toUpperCase()} ${p}: path parameters`);
    }
  }
});

test('every schema is valid JSON Schema 2020-12 and every example fits its schema', (t) => {
  for (const [name, schema] of Object.entries<Record<string, unknown>>(doc.components.schemas)) {
    const check = schemaOf({ $ref: `#/components/schemas/${name}` });
    for (const example of (schema.examples as unknown[] | undefined) ?? []) {
      t.true(check(example), `${name} example: ${ajv.errorsText(check.errors)}`);
    }
  }
  for (const [at, media] of mediaTypes()) {
    if (!media.schema) continue;
    const check = schemaOf(media.schema);
    const examples = [
      ...(media.example !== undefined ? [media.example] : []),
      ...Object.values(media.examples ?? {}).map((e) => e.value),
    ];
    for (const example of examples) t.true(check(example), `${at} example: ${ajv.errorsText(check.errors)}`);
  }
});

test('the document has exactly the routes the app registers, with the same methods', (t) => {
  const registered = registeredRoutes(createApp(placeholderDeps()));
  const documented = documentedRoutes();
  t.true(registered.length > 0, 'routes were found on the app');
  t.deepEqual(
    {
      servedButNotDocumented: registered.filter((r) => !documented.includes(r)),
      documentedButNotServed: documented.filter((r) => !registered.includes(r)),
    },
    { servedButNotDocumented: [], documentedButNotServed: [] },
  );
});

/** The keys written twice in one object of a JSON text (JSON.parse keeps the last one's value without a word), by YAML's parser: JSON is YAML. */
const keysTwice = (text: string): string[] =>
  parseDocument(text, { uniqueKeys: true })
    .errors.filter((e) => e.code === 'DUPLICATE_KEY')
    .map((e) => e.message.split('\n')[0]);

test('the document names every problem type the code answers, each once, no key twice, at the package’s version', (t) => {
  const problemType = doc.components.schemas.ProblemType;
  t.deepEqual([...problemType.enum].sort(), [...PROBLEM_TYPES].sort());
  for (const type of PROBLEM_TYPES) t.true(problemType.description.includes(`\`${type}\`: `), `${type} is described`);
  t.is(keysTwice('{"a": 1, "b": {"a": [{"a": 2}]}, "a": "x"}').length, 1);
  t.deepEqual(keysTwice(fs.readFileSync(DOC_PATH, 'utf8')), []);
  const pkg = JSON.parse(fs.readFileSync(path.join(__dirname, '../../package.json'), 'utf8'));
  t.is(doc.info.version, pkg.version);
});

test('GET /openapi.json serves the document', async (t) => {
  const res = await fetch(`${baseUrl}/openapi.json`);
  t.is(res.status, 200);
  t.regex(res.headers.get('content-type') ?? '', /^application\/json\b/);
  t.deepEqual(await res.json(), doc);
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
  const res = await fetch(`${baseUrl}${p}`, {
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
      const res = await post(c.path, body, c.headers);
      const refused = res.status === 400 && res.body.type === 'invalid-request';
      const what = `${JSON.stringify(body)} -> ${res.status} ${JSON.stringify(res.body)}`;
      t.is(refused, !documented || belowMinimum, what);
      if (documented && !belowMinimum) accepted++;
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
