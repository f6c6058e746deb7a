import fs from 'node:fs';
import path from 'node:path';
import Ajv from 'ajv';
import test from 'ava';
import Stripe from 'stripe';
import { parse } from 'yaml';
import { STRIPE_API_VERSION } from '../../config/clients';
import { SEARCH_ATTRIBUTES } from '../../dev/temporal';

// docker-compose.yml checked the way Compose loads it, since no container engine runs here:
// variables interpolated with nothing exported (every command must still work), YAML merge keys
// resolved, then validated against the Compose Specification's JSON schema (vendored, see README).
// Then what the deployment promises: only the API published, a healthcheck on every long-running
// service, start order by health and by completed jobs, a stop grace longer than the API's drain,
// every variable in .env.example, and the image running compiled code with plain node.

const root = path.resolve(__dirname, '../..');
const read = (file: string) => fs.readFileSync(path.join(root, file), 'utf8');
const composeText = read('docker-compose.yml');
// The file names draft-07 by its https URL, which ajv knows as http: its own draft-07 applies.
const schema = JSON.parse(fs.readFileSync(path.join(__dirname, 'compose-spec.json'), 'utf8'));
delete schema.$schema;

const VARIABLE = /\$\$|\$\{([A-Za-z_][A-Za-z0-9_]*)(?:(:?[-?+])([^}]*))?\}|\$([A-Za-z_][A-Za-z0-9_]*)/g;

/** Compose's interpolation of one string: `$$` is a literal `$`; `${VAR:?msg}` fails when VAR is unset or empty. */
function interpolate(s: string, env: Record<string, string>): string {
  return s.replace(VARIABLE, (whole, braced?: string, op?: string, arg?: string, bare?: string) => {
    if (whole === '$$') return '$';
    const name = (braced ?? bare)!;
    const value = env[name];
    const unset = op?.startsWith(':') ? !value : value === undefined;
    if (op?.endsWith('?') && unset) throw new Error(`required variable ${name} is missing: ${arg}`);
    if (op?.endsWith('-') && unset) return arg ?? '';
    if (op?.endsWith('+')) return unset ? '' : (arg ?? '');
    return value ?? '';
  });
}

function deepMap(v: unknown, f: (s: string) => string): unknown {
  if (typeof v === 'string') return f(v);
  if (Array.isArray(v)) return v.map((x) => deepMap(x, f));
  if (v && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, deepMap(x, f)]));
  return v;
}

/** The variables the file uses, from the raw text (before YAML: comments are skipped). */
function variablesOf(text: string): Set<string> {
  const names = new Set<string>();
  for (const line of text.split('\n')) {
    if (line.trimStart().startsWith('#')) continue;
    for (const m of line.matchAll(VARIABLE)) if (m[0] !== '$$') names.add(m[1] ?? m[4]);
  }
  return names;
}

interface Service {
  image?: string;
  build?: unknown;
  command?: string[] | string;
  ports?: (string | { published?: string; host_ip?: string })[];
  healthcheck?: { test?: unknown; disable?: boolean };
  depends_on?: Record<string, { condition?: string }> | string[];
  profiles?: string[];
  restart?: string;
  stop_grace_period?: string;
  environment?: Record<string, string>;
  entrypoint?: string[];
}

const loaded = deepMap(parse(composeText, { merge: true }), (s) => interpolate(s, {})) as {
  services: Record<string, Service>;
};
// x-* extension fields are allowed by the schema; the services are what matter.
const services = loaded.services;
/** One-shot jobs: they run to completion (restart on failure only) and others wait for that. */
const isJob = (s: Service) => /^(no|on-failure(:\d+)?)$/.test(s.restart ?? 'no') && !s.ports;

test('docker-compose.yml loads with no variable exported and passes the Compose Specification schema', (t) => {
  const ajv = new Ajv({ allErrors: true, strict: false });
  const validate = ajv.compile(schema);
  const ok = validate(loaded);
  t.true(ok, JSON.stringify(validate.errors, null, 2));
  t.false(
    /\$\{[A-Za-z_][A-Za-z0-9_]*:?\?/.test(composeText),
    'no ${VAR:?}: every compose command must work without the secrets',
  );
});

test('the schema check fails a broken file, so a pass means something', (t) => {
  const validate = new Ajv({ allErrors: true, strict: false }).compile(schema);
  const broken = structuredClone(loaded) as { services: Record<string, Record<string, unknown>> };
  broken.services.api.depends_on = { migrate: { condition: 'service_finished' } };
  broken.services.worker.stop_grace_period = { seconds: 60 };
  t.false(validate(broken));
});

test('every variable docker-compose.yml uses is listed in .env.example', (t) => {
  const listed = new Set(
    read('.env.example')
      .split('\n')
      .map((l) => /^([A-Za-z_][A-Za-z0-9_]*)=/.exec(l)?.[1])
      .filter((n): n is string => n !== undefined),
  );
  const missing = [...variablesOf(composeText)].filter((n) => !listed.has(n));
  t.deepEqual(missing, []);
});

test('only the API publishes a port; what a profile adds is published on loopback only', (t) => {
  const published = Object.entries(services).filter(([, s]) => s.ports?.length);
  t.deepEqual(
    published.filter(([, s]) => !s.profiles).map(([name]) => name),
    ['api'],
  );
  for (const [name, s] of published.filter(([, s]) => s.profiles)) {
    for (const p of s.ports!)
      t.true(typeof p === 'string' && p.startsWith('127.0.0.1:'), `${name}: ${JSON.stringify(p)}`);
  }
});

test('every long-running service has a healthcheck, and every dependency waits for health or completion', (t) => {
  for (const [name, s] of Object.entries(services)) {
    if (!isJob(s)) t.truthy(s.healthcheck?.test, `${name} has a healthcheck`);
    const deps = s.depends_on ?? {};
    t.false(Array.isArray(deps), `${name}: depends_on names conditions`);
    for (const [dep, { condition }] of Object.entries(deps as Record<string, { condition?: string }>)) {
      const target = services[dep];
      t.truthy(target, `${name} depends on ${dep}, which exists`);
      t.is(condition, isJob(target) ? 'service_completed_successfully' : 'service_healthy', `${name} waits for ${dep}`);
    }
  }
  // Temporal's layout: schema job → server → namespace job → search attributes job → worker and API.
  t.like(services.temporal, { image: services['temporal-schema'].image!.replace('admin-tools', 'server') });
  t.regex(services.temporal.image!, /^temporalio\/server:/);
  for (const app of ['worker', 'api']) {
    t.like(services[app].depends_on, {
      migrate: { condition: 'service_completed_successfully' },
      'temporal-search-attributes': { condition: 'service_completed_successfully' },
    });
  }
});

test('the search-attribute job registers what the local dev server registers', (t) => {
  const script = String(services['temporal-search-attributes'].command);
  const registered = Object.fromEntries(
    [...script.matchAll(/--name (\w+) --type (\w+)/g)].map((m) => [m[1], m[2].toUpperCase()]),
  );
  t.deepEqual(registered, { ...SEARCH_ATTRIBUTES });
});

const seconds = (d: string) => {
  const m = /^(\d+)(s|m)$/.exec(d);
  if (!m) throw new Error(`unexpected duration ${d}`);
  return Number(m[1]) * (m[2] === 'm' ? 60 : 1);
};

test('docker stops the API and the worker later than they take to drain', (t) => {
  const graceMs = Number(services.api.environment!.SHUTDOWN_GRACE_MS);
  // /readyz 503 for SHUTDOWN_GRACE_MS, then up to 10 s for requests in flight.
  t.true(seconds(services.api.stop_grace_period!) * 1000 > graceMs + 10_000);
  // The worker's shutdownGraceTime is 10 s (worker/create-worker.ts).
  t.true(seconds(services.worker.stop_grace_period!) > 10);
});

test('the image runs compiled code with plain node: no npm, no tsx at runtime', (t) => {
  const dockerfile = read('Dockerfile');
  t.regex(dockerfile, /^CMD \["node", "dist\/api\/main\.js"\]$/m);
  t.regex(dockerfile, /tsc -p tsconfig\.build\.json/);
  t.regex(dockerfile, /bundle-workflows\.js dist\/workflow-bundle\.js/);
  t.regex(dockerfile, /npm ci --omit=dev/);
  for (const [name, s] of Object.entries(services)) {
    if (!s.build) continue;
    const [cmd, script] = s.command as string[];
    t.is(cmd, 'node', `${name} runs node`);
    const source = script.replace(/^dist\//, '').replace(/\.js$/, '.ts');
    t.true(fs.existsSync(path.join(root, source)), `${name}: ${script} is compiled from ${source}`);
  }
  const pkg = JSON.parse(read('package.json'));
  t.is(pkg.dependencies.tsx, undefined, 'tsx is a development dependency only');
});

test('the Stripe API version pinned in config/clients.ts is the one stripe-node was built for', (t) => {
  t.is(STRIPE_API_VERSION, Stripe.API_VERSION);
  t.true(read('docs/stripe.md').includes(STRIPE_API_VERSION));
});
