import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import test from 'ava';
import { parse, parseAllDocuments } from 'yaml';
import { loadApiConfig, loadCliConfig, loadWorkerConfig } from '../../../config';
import { variable, type ConfigProcess } from '../../../config/variables';
import { READY_CHECK_MS, opsRoutes } from '../../../api/routes/ops';
import type { ApiDeps } from '../../../api/deps';
import { DRAIN_MS } from '../../../api/shutdown';
import { WORKER_SHUTDOWN_GRACE_MS } from '../../../worker/create-worker';
import { STRIPE_REQUEST_TIMEOUT_MS } from '../../../config/clients';
import { ACTIVITY_TIMEOUT_MS, STRIPE_CALL_TIMEOUT_MS } from '../../../vocabulary/limits';
import { testTelemetry } from '../../helpers/fixtures';
import { kustomizeCommand } from '../helpers/kustomize';

// deploy/kubernetes checked offline, as no cluster runs here: the objects kustomization.yaml lists,
// read as kustomize reads them (and built by `kubectl kustomize` where kubectl is installed). What
// the deployment promises: the probes ask the paths and ports the code serves, every variable is
// one the configuration table has and the process reads, and the loaders accept what the pods get;
// secrets only from the Secret, whose example holds no value; the pods locked down; the Job
// migrates and the Deployments do not; the stop grace covers the drain; one image everywhere.
// Not checked: the objects against the Kubernetes API's schema. kubectl validates only against a
// cluster, and the npm package that vendors the schema (kubernetes-models: 18 MB of generated
// validators) accepts unknown fields, the commonest mistake in a manifest.

const root = path.resolve(__dirname, '../../..');
const dir = path.join(root, 'deploy/kubernetes');
const read = (file: string) => fs.readFileSync(path.join(dir, file), 'utf8');
/** Variables Node itself reads, which a pod may set beside the configuration table's. */
const NODE_RUNTIME_VARIABLES = ['NODE_OPTIONS'];
const packageVersion = (JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8')) as { version: string })
  .version;

interface Kustomization {
  resources: string[];
  configMapGenerator: { name: string; envs: string[] }[];
  components: string[];
}

/** The release component: the image and its tag. */
interface Release {
  images: { name: string; newName?: string; newTag?: string }[];
}

interface EnvVar {
  name: string;
  value?: string;
  valueFrom?: { secretKeyRef?: { name: string; key: string; optional?: boolean } };
}

interface Probe {
  httpGet?: { path: string; port: string | number };
  timeoutSeconds?: number;
}

interface Container {
  name: string;
  image: string;
  command: string[];
  ports?: { name?: string; containerPort: number }[];
  env?: EnvVar[];
  envFrom?: { configMapRef?: { name: string }; secretRef?: { name: string } }[];
  startupProbe?: Probe;
  readinessProbe?: Probe;
  livenessProbe?: Probe;
  resources?: { requests?: Record<string, string>; limits?: Record<string, string> };
  securityContext?: {
    allowPrivilegeEscalation?: boolean;
    readOnlyRootFilesystem?: boolean;
    capabilities?: { drop?: string[] };
  };
}

interface PodSpec {
  containers: Container[];
  terminationGracePeriodSeconds?: number;
  automountServiceAccountToken?: boolean;
  restartPolicy?: string;
  securityContext?: { runAsNonRoot?: boolean; runAsUser?: number; seccompProfile?: { type: string } };
}

interface K8sObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; labels?: Record<string, string> };
  spec: {
    replicas?: number;
    selector?: Record<string, string> | { matchLabels: Record<string, string> };
    maxUnavailable?: number;
    ports?: { name: string; port: number; targetPort: string | number }[];
    template?: { metadata: { labels: Record<string, string>; annotations?: Record<string, string> }; spec: PodSpec };
  };
}

const kustomization = parse(read('kustomization.yaml')) as Kustomization;
const release = parse(read(path.join(kustomization.components[0], 'kustomization.yaml'))) as Release;
/** The objects of a kustomization's resources: its files, and its folders' own kustomizations. */
const objectsOf = (folder: string, resources: string[]): K8sObject[] =>
  resources.flatMap((entry) => {
    const at = path.join(folder, entry);
    if (fs.statSync(path.join(dir, at)).isDirectory())
      return objectsOf(at, (parse(read(path.join(at, 'kustomization.yaml'))) as Kustomization).resources);
    return parseAllDocuments(read(at)).map((doc) => doc.toJS() as K8sObject);
  });
const objects = objectsOf('.', kustomization.resources);
const byKind = (kind: string) => objects.filter((o) => o.kind === kind);
const named = (kind: string, name: string) => {
  const found = objects.find((o) => o.kind === kind && o.metadata.name === name);
  if (!found) throw new Error(`no ${kind} ${name} in deploy/kubernetes`);
  return found;
};
const api = named('Deployment', 'flash-sale-checkout-api');
const worker = named('Deployment', 'flash-sale-checkout-worker');
const migrateJob = named('Job', 'flash-sale-checkout-migrate');
const podOf = (o: K8sObject) => o.spec.template!.spec;
const containerOf = (o: K8sObject) => podOf(o).containers[0];
/** Every workload: the process each one's container runs, as the configuration table names it. */
const WORKLOADS: [K8sObject, ConfigProcess][] = [
  [api, 'api'],
  [worker, 'worker'],
  [migrateJob, 'cli'],
];

/** The generated ConfigMap's settings, read as kustomize reads an env file. */
const settings: Record<string, string> = Object.fromEntries(
  kustomization.configMapGenerator
    .flatMap((g) => g.envs)
    .flatMap((file) => read(file).split('\n'))
    .filter((line) => line.trim() && !line.startsWith('#'))
    .map((line) => {
      const eq = line.indexOf('=');
      return [line.slice(0, eq), line.slice(eq + 1)];
    }),
);
const configMapName = kustomization.configMapGenerator[0].name;
const secretExample = parse(read('secret.example.yaml')) as K8sObject & { stringData: Record<string, string> };

/** What one container's process sees: the ConfigMap, then its own env, the Secret's keys as `secrets` gives them. */
function envOf(c: Container, secrets: (key: string) => string | undefined): Record<string, string> {
  const env: Record<string, string> = {};
  for (const from of c.envFrom ?? []) if (from.configMapRef?.name === configMapName) Object.assign(env, settings);
  for (const e of c.env ?? []) {
    const value = e.valueFrom?.secretKeyRef ? secrets(e.valueFrom.secretKeyRef.key) : e.value;
    if (value !== undefined) env[e.name] = value;
  }
  return env;
}

/** Values an operator puts in the Secret: of the right form, long enough, none of them a development value. */
const SECRET_VALUES: Record<string, string> = {
  DATABASE_URL: 'postgres://flashsale:pw@db.internal:5432/flashsale',
  STRIPE_SECRET_KEY: `sk_live_${'k'.repeat(24)}`,
  STRIPE_WEBHOOK_SECRET: `whsec_${'w'.repeat(32)}`,
  SMTP_URL: 'smtps://mailer:pw@smtp.internal:465',
};
const filled = (key: string): string => SECRET_VALUES[key] ?? `${key.toLowerCase()}-`.padEnd(64, 'x');

test('kustomization.yaml lists every manifest but the Secret example, and names the image the Dockerfile builds', (t) => {
  const manifests = fs
    .readdirSync(dir)
    .filter(
      (f) =>
        (f.endsWith('.yaml') && f !== 'kustomization.yaml') || fs.existsSync(path.join(dir, f, 'kustomization.yaml')),
    );
  t.deepEqual(
    [...kustomization.resources, ...kustomization.components].sort(),
    manifests.filter((f) => f !== 'secret.example.yaml').sort(),
  );
  t.deepEqual(objects.map((o) => `${o.kind}/${o.metadata.name}`).sort(), [
    'Deployment/flash-sale-checkout-api',
    'Deployment/flash-sale-checkout-worker',
    'Job/flash-sale-checkout-migrate',
    'PodDisruptionBudget/flash-sale-checkout-api',
    'PodDisruptionBudget/flash-sale-checkout-worker',
    'Service/flash-sale-checkout-api',
  ]);
  // One image for every process, the one docker-compose.yml builds; kustomize sets its registry and tag.
  const compose = parse(fs.readFileSync(path.join(root, 'docker-compose.yml'), 'utf8'), { merge: true }) as {
    services: Record<string, { image?: string; command?: string[] }>;
  };
  const image = compose.services.api.image!;
  for (const [o] of WORKLOADS) t.is(containerOf(o).image, image, o.metadata.name);
  t.deepEqual(
    release.images.map((i) => i.name),
    [image.split(':')[0]],
  );
  // The release of this tree: an older image lacks its saga patches and probes (1.5.0 was left here at 1.8.0).
  t.is(release.images[0].newTag, packageVersion, "the release's tag is package.json's version");
  // Each runs the compiled entry docker-compose.yml runs for the same process.
  t.deepEqual(containerOf(api).command, compose.services.api.command);
  t.deepEqual(containerOf(worker).command, compose.services.worker.command);
  t.deepEqual(containerOf(migrateJob).command, compose.services.migrate.command);
  t.deepEqual(containerOf(migrateJob).command, ['node', 'dist/ops/migrate.js']);
  t.true(fs.existsSync(path.join(root, 'ops/migrate.ts')));
});

test('`kubectl kustomize` builds the same objects, the image renamed and the ConfigMap named by its hash', (t) => {
  const command = kustomizeCommand(dir);
  if (!command) {
    t.fail('neither kubectl nor kustomize found: .ci/run installs kustomize into the tool cache (go install)');
    return;
  }
  const built = spawnSync(command[0], command[1], { encoding: 'utf8' });
  t.is(built.status, 0, built.stderr);
  const out = parseAllDocuments(built.stdout).map((d) => d.toJS() as K8sObject & { data?: Record<string, string> });
  const configMap = out.find((o) => o.kind === 'ConfigMap')!;
  t.regex(configMap.metadata.name, new RegExp(`^${configMapName}-[a-z0-9]+$`));
  t.deepEqual(configMap.data, settings);
  const names = (list: K8sObject[]) => list.map((o) => `${o.kind}/${o.metadata.name}`).sort();
  t.deepEqual(names(out.filter((o) => o.kind !== 'ConfigMap')), names(objects));
  const { newName, newTag } = release.images[0];
  for (const o of out.filter((x) => x.spec?.template)) {
    const c = o.spec.template!.spec.containers[0];
    t.is(c.image, `${newName}:${newTag}`, o.metadata.name);
    for (const from of c.envFrom ?? []) t.is(from.configMapRef?.name, configMap.metadata.name, o.metadata.name);
  }
});

test("the probes ask the paths and ports the code serves: the API's /readyz?scope=process and /healthz, the worker's /healthz and /livez", async (t) => {
  const apiConfig = loadApiConfig(envOf(containerOf(api), filled));
  const apiPort = (name: string | number) => containerOf(api).ports!.find((p) => p.name === name)!.containerPort;
  const served = opsRoutes({ metricsToken: '' } as ApiDeps).stack.map((layer) => layer.path);
  const c = containerOf(api);
  // Ready unless draining: a shared dependency's outage must not empty the Service.
  t.is(c.readinessProbe!.httpGet!.path, '/readyz?scope=process');
  t.is(c.livenessProbe!.httpGet!.path, '/healthz');
  t.is(c.startupProbe!.httpGet!.path, '/healthz');
  for (const probe of [c.readinessProbe!, c.livenessProbe!, c.startupProbe!]) {
    const route = probe.httpGet!.path.split('?')[0];
    t.true(served.includes(route), `the API serves ${route}`);
    t.is(apiPort(probe.httpGet!.port), apiConfig.port, 'the port the API listens on (PORT)');
  }
  t.is(apiConfig.host, '0.0.0.0', 'reachable from the kubelet and the Service');
  // /readyz answers within READY_CHECK_MS and a little: the probe waits longer.
  t.true(c.readinessProbe!.timeoutSeconds! * 1000 > READY_CHECK_MS + 1000);
  // Liveness restarts a process that no longer answers, not one a crowd makes seconds late.
  t.true(c.livenessProbe!.timeoutSeconds! >= 10);
  const service = named('Service', 'flash-sale-checkout-api');
  t.is(apiPort(service.spec.ports![0].targetPort), apiConfig.port);

  // The worker's /healthz, served by the code on the port its probes name.
  const w = containerOf(worker);
  const workerConfig = loadWorkerConfig(envOf(w, filled));
  t.is(workerConfig.metrics.host, '0.0.0.0');
  const metricsPort = w.ports!.find((p) => p.name === 'metrics')!.containerPort;
  t.is(metricsPort, workerConfig.metrics.port);
  t.is(podOf(worker).containers.length, 1);
  t.is(worker.spec.template!.metadata.annotations!['prometheus.io/port'], String(metricsPort));
  // Liveness does not ask Temporal: a restart cures no Temporal outage (its pods would crash-loop
  // and come back late); readiness does.
  t.is(w.livenessProbe!.httpGet!.path, '/livez');
  t.is(w.startupProbe!.httpGet!.path, '/livez');
  t.is(w.readinessProbe!.httpGet!.path, '/healthz');
  const telemetry = await testTelemetry(t);
  for (const probe of [w.readinessProbe!, w.livenessProbe!, w.startupProbe!]) {
    t.is(probe.httpGet!.port, 'metrics');
    const res = await fetch(new URL(probe.httpGet!.path, telemetry.url));
    t.is(res.status, 200, `the worker serves ${probe.httpGet!.path}`);
  }
});

test('every variable the pods get is in the configuration table and read by that process; the loaders accept them', (t) => {
  for (const name of Object.keys(settings)) {
    const row = variable(name);
    t.true(
      row.readBy.includes('api') || row.readBy.includes('worker'),
      `${name} (settings.env) is read by the API or the worker`,
    );
    t.falsy(row.secret, `${name} is a secret: it belongs in the Secret`);
  }
  for (const [o, process] of WORKLOADS) {
    for (const e of containerOf(o).env ?? []) {
      // Node's own (the worker's heap, worker.yaml): read by the runtime, not by the service's code.
      if (NODE_RUNTIME_VARIABLES.includes(e.name)) continue;
      t.true(variable(e.name).readBy.includes(process), `${e.name} is read by the ${process}`);
      const ref = e.valueFrom?.secretKeyRef;
      if (ref) {
        t.is(ref.name, secretExample.metadata.name, `${e.name} comes from the Secret`);
        t.is(ref.key, e.name, 'the Secret names each key as its variable');
        t.true(ref.key in secretExample.stringData, `${ref.key} is in secret.example.yaml`);
      } else t.falsy(variable(e.name).secret, `${e.name} is a secret: it belongs in the Secret`);
    }
  }
  for (const key of Object.keys(secretExample.stringData)) t.notThrows(() => variable(key), key);
  // The loaders take what the pods get, and the Deployments leave the migrations to the Job.
  t.false(loadApiConfig(envOf(containerOf(api), filled)).migrateAtBoot);
  t.false(loadWorkerConfig(envOf(containerOf(worker), filled)).migrateAtBoot);
  t.is(loadCliConfig(envOf(containerOf(migrateJob), filled)).databaseUrl, filled('DATABASE_URL'));
  for (const o of [api, worker]) {
    t.is(containerOf(o).env!.find((e) => e.name === 'MIGRATE_AT_BOOT')?.value, '0', o.metadata.name);
    t.deepEqual(containerOf(o).envFrom, [{ configMapRef: { name: configMapName } }], o.metadata.name);
  }
  t.is(podOf(migrateJob).restartPolicy, 'Never');
});

test('the Secret example holds no value, and the secrets the API and the worker require are in it', (t) => {
  t.is(secretExample.kind, 'Secret');
  for (const [key, value] of Object.entries(secretExample.stringData)) t.is(value, '', `${key} is left empty`);
  t.notRegex(read('secret.example.yaml'), /^[^#]*\b(sk|rk)_(live|test)_\w|whsec_\w/m);
  // Without the optional ones (read when present) the loaders still accept the pods' environment.
  const required = (c: Container) =>
    (c.env ?? []).filter((e) => e.valueFrom?.secretKeyRef && !e.valueFrom.secretKeyRef.optional).map((e) => e.name);
  const only = (c: Container) => (key: string) =>
    required(c).includes(key) || key === 'BUYER_TOKEN_SECRET' ? filled(key) : undefined;
  t.notThrows(() => loadApiConfig(envOf(containerOf(api), only(containerOf(api)))));
  t.notThrows(() => loadWorkerConfig(envOf(containerOf(worker), only(containerOf(worker)))));
  // Each required secret of the API is one the API refuses to start without.
  for (const key of required(containerOf(api)).filter((k) => k !== 'DATABASE_URL' && k !== 'STRIPE_SECRET_KEY')) {
    const env = envOf(containerOf(api), only(containerOf(api)));
    delete env[key];
    t.throws(() => loadApiConfig(env), { message: new RegExp(key) }, key);
  }
});

test('every pod runs as a non-root user, read-only, without privileges, with requests and limits', (t) => {
  for (const [o] of WORKLOADS) {
    const pod = podOf(o);
    const what = o.metadata.name;
    t.true(pod.securityContext?.runAsNonRoot, what);
    // The image's user is `node`: a name, which the kubelet cannot check against runAsNonRoot.
    t.true(Number.isInteger(pod.securityContext?.runAsUser) && pod.securityContext!.runAsUser! > 0, what);
    t.is(pod.securityContext?.seccompProfile?.type, 'RuntimeDefault', what);
    t.false(pod.automountServiceAccountToken, what);
    for (const c of pod.containers) {
      t.like(c.securityContext, { allowPrivilegeEscalation: false, readOnlyRootFilesystem: true }, what);
      t.deepEqual(c.securityContext?.capabilities?.drop, ['ALL'], what);
      for (const kind of ['requests', 'limits'] as const) {
        t.truthy(c.resources?.[kind]?.cpu, `${what} ${kind} cpu`);
        t.truthy(c.resources?.[kind]?.memory, `${what} ${kind} memory`);
      }
    }
  }
});

test('the kubelet stops the API and the worker later than they take to drain', (t) => {
  const { shutdownGraceMs } = loadApiConfig(envOf(containerOf(api), filled));
  // /readyz 503 for SHUTDOWN_GRACE_MS, DRAIN_MS for the requests in flight, then the clients close.
  t.true(podOf(api).terminationGracePeriodSeconds! * 1000 > shutdownGraceMs + DRAIN_MS + 5_000);
  t.true(podOf(worker).terminationGracePeriodSeconds! * 1000 > WORKER_SHUTDOWN_GRACE_MS + 5_000);
  // The worker's grace outlasts its longest activity attempt, a Stripe call's (which stripe-node
  // gives up first), so a rollout cuts none.
  t.true(WORKER_SHUTDOWN_GRACE_MS > STRIPE_CALL_TIMEOUT_MS);
  t.true(STRIPE_CALL_TIMEOUT_MS > STRIPE_REQUEST_TIMEOUT_MS);
  t.true(WORKER_SHUTDOWN_GRACE_MS > ACTIVITY_TIMEOUT_MS);
});

test('two replicas of each, a disruption budget that leaves one, the Service and budgets on the right pods', (t) => {
  for (const o of [api, worker]) {
    const labels = o.spec.template!.metadata.labels;
    t.deepEqual((o.spec.selector as { matchLabels: Record<string, string> }).matchLabels, labels);
    t.true(o.spec.replicas! >= 2, o.metadata.name);
    const pdb = named('PodDisruptionBudget', o.metadata.name);
    t.deepEqual((pdb.spec.selector as { matchLabels: Record<string, string> }).matchLabels, labels);
    t.true(pdb.spec.maxUnavailable! < o.spec.replicas!, o.metadata.name);
  }
  t.deepEqual(named('Service', 'flash-sale-checkout-api').spec.selector, api.spec.template!.metadata.labels);
  t.is(byKind('Job').length, 1);
});
