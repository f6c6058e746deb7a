import fs from 'node:fs';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import Ajv2020, { type ValidateFunction } from 'ajv/dist/2020';
import { createApp } from '../../api/app';
import type { ApiDeps } from '../../api/deps';
import { BadBuyerToken } from '../../config/buyer-tokens';
import { createLogger } from '../../config/log';
import { createMetrics } from '../../api/metrics';
import { Lifecycle } from '../../api/shutdown';
import type { Db } from '../../store/db';
import type { Gate } from '../../store/gate';

// docs/openapi.json and the app built on placeholder dependencies that throw if anything calls them:
// what the OpenAPI tests compare. No route they reach touches Postgres or Temporal.

export const DOC_PATH = path.join(__dirname, '../../docs/openapi.json');
export const doc = JSON.parse(fs.readFileSync(DOC_PATH, 'utf8'));

export const ADMIN_TOKEN = 'openapi-test-admin';
export const SUPPORT_TOKEN = 'openapi-test-support';
export const HTTP_METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'] as const;

/** Stands in for a client the routes are built with: any call on it fails (none should happen before a body is valid). */
function placeholder(name: string): unknown {
  return new Proxy(function () {}, {
    get: (_target, prop) => (prop === 'then' ? undefined : placeholder(`${name}.${String(prop)}`)),
    apply: () => {
      throw new Error(`${name}() called: this test only builds the routes`);
    },
  });
}

export function placeholderDeps(overrides: Partial<ApiDeps> = {}): ApiDeps {
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
    ...overrides,
  };
  return new Proxy(known, {
    get: (target, prop: string) => (prop in target ? target[prop as keyof ApiDeps] : placeholder(`deps.${prop}`)),
  }) as ApiDeps;
}

/** Follows a local JSON pointer (`#/components/schemas/Product`). */
export function resolvePointer(ref: string): unknown {
  if (!ref.startsWith('#/')) throw new Error(`not a local reference: ${ref}`);
  return ref
    .slice(2)
    .split('/')
    .map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'))
    .reduce<unknown>((node, key) => (node as Record<string, unknown> | undefined)?.[key], doc);
}

/** JSON Schema 2020-12 (OpenAPI 3.1's dialect) over the document's components, `$ref`s rewritten to `$defs`. */
export const ajv = new Ajv2020({ strict: true, allErrors: true, validateFormats: false });
const defs = JSON.parse(
  JSON.stringify(doc.components.schemas).replace(/"#\/components\/schemas\//g, '"#/$defs/'),
) as Record<string, unknown>;
ajv.addSchema({ $id: 'openapi-components', $defs: defs });
export function schemaOf(schema: Record<string, unknown>): ValidateFunction {
  const rewritten = JSON.parse(
    JSON.stringify(schema).replace(/"#\/components\/schemas\//g, '"openapi-components#/$defs/'),
  );
  return ajv.compile(rewritten);
}
export function requestSchema(pathName: string, method: string): Record<string, unknown> {
  const op = doc.paths[pathName][method];
  let schema = op.requestBody.content['application/json'].schema as Record<string, unknown>;
  if (typeof schema.$ref === 'string') schema = resolvePointer(schema.$ref) as Record<string, unknown>;
  return schema;
}

/** The app on placeholder dependencies (some given), listening on a free loopback port. */
export async function serveApp(
  overrides: Partial<ApiDeps> = {},
): Promise<{ baseUrl: string; close: () => Promise<void> }> {
  const server: Server = createApp(placeholderDeps(overrides)).listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  return {
    baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}
