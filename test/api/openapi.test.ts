import fs from 'node:fs';
import path from 'node:path';
import type { Router } from '@koa/router';
import test from 'ava';
import { parseDocument } from 'yaml';
import type Koa from 'koa';
import { createApp } from '../../api/app';
import { CHECKOUT_METHOD_TYPES } from '../../store/rules/accepted-payment-methods';
import { PROBLEM_TYPES } from '../../api/problem';
import {
  ajv,
  doc,
  DOC_PATH,
  HTTP_METHODS,
  placeholderDeps,
  resolvePointer,
  schemaOf,
  serveApp,
} from '../helpers/openapi';

// docs/openapi.json against the app as it is built: a valid OpenAPI 3.1 document, exactly the
// routes the routers register, and the same bytes at GET /openapi.json (the request bodies against
// the routes' own validators: openapi-bodies.test.ts).

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

let app: Awaited<ReturnType<typeof serveApp>>;
test.before(async () => {
  app = await serveApp();
});
test.after.always(async () => {
  await app?.close();
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
  const res = await fetch(`${app.baseUrl}/openapi.json`);
  t.is(res.status, 200);
  t.regex(res.headers.get('content-type') ?? '', /^application\/json\b/);
  t.deepEqual(await res.json(), doc);
});
