import { spawnSync } from 'node:child_process';
import path from 'node:path';
import test from 'ava';
import { parseAllDocuments } from 'yaml';
import { CROWD_PATH_PREFIXES, laneOf } from '../../../api/lanes';
import { kustomizeCommand } from '../helpers/kustomize';

// deploy/kubernetes-lanes, built as kubectl would: the base deployment, plus the API once more for
// the waiting crowd, and an Ingress sending the crowd's paths (api/lanes.ts) to it. Each Service
// selects its own pods only, and the crowd's pods are the API's but for their labels.

interface Obj {
  kind: string;
  metadata: { name: string; labels?: Record<string, string> };
  spec: {
    selector?: Record<string, string> | { matchLabels: Record<string, string> };
    template?: {
      metadata: { labels: Record<string, string> };
      spec: {
        containers: unknown[];
        topologySpreadConstraints?: { labelSelector: { matchLabels: Record<string, string> } }[];
      };
    };
    rules?: {
      http: {
        paths: { path: string; pathType: string; backend: { service: { name: string; port: { name: string } } } }[];
      };
    }[];
  };
}

const root = path.resolve(__dirname, '../../..');

function build(folder: string): Obj[] {
  const command = kustomizeCommand(path.join(root, folder));
  if (!command) throw new Error('neither kubectl nor kustomize found: .ci/run installs kustomize into the tool cache');
  const built = spawnSync(command[0], command[1], { encoding: 'utf8' });
  if (built.status !== 0) throw new Error(`${command.join(' ')}: ${built.stderr}`);
  return parseAllDocuments(built.stdout).map((d) => d.toJS() as Obj);
}

const matches = (selector: Record<string, string>, labels: Record<string, string>) =>
  Object.entries(selector).every(([k, v]) => labels[k] === v);

test('the lanes overlay is the base plus the crowd’s API (Deployment, Service, budget) and an Ingress', (t) => {
  const base = build('deploy/kubernetes');
  const lanes = build('deploy/kubernetes-lanes');
  const names = (list: Obj[]) => list.map((o) => `${o.kind}/${o.metadata.name}`).sort();
  t.deepEqual(
    names(lanes),
    [
      ...names(base),
      'Deployment/flash-sale-checkout-api-crowd',
      'Ingress/flash-sale-checkout',
      'PodDisruptionBudget/flash-sale-checkout-api-crowd',
      'Service/flash-sale-checkout-api-crowd',
      'Service/flash-sale-checkout-buyers',
    ].sort(),
  );
  const find = (kind: string, name: string) => lanes.find((o) => o.kind === kind && o.metadata.name === name)!;
  const api = find('Deployment', 'flash-sale-checkout-api');
  const crowd = find('Deployment', 'flash-sale-checkout-api-crowd');
  // The same pods (the container, its image and its settings by the ConfigMap's hashed name), other
  // labels: each Deployment spreads its own pods over the nodes.
  const apiPods = api.spec.template!.metadata.labels;
  const crowdPods = crowd.spec.template!.metadata.labels;
  const { topologySpreadConstraints: apiSpread, ...apiPod } = api.spec.template!.spec;
  const { topologySpreadConstraints: crowdSpread, ...crowdPod } = crowd.spec.template!.spec;
  t.deepEqual(crowdPod, apiPod);
  t.deepEqual(crowdSpread![0].labelSelector.matchLabels, crowdPods);
  t.deepEqual(apiSpread![0].labelSelector.matchLabels, apiPods);
  t.is(crowdPods['app.kubernetes.io/component'], 'api-crowd');
  for (const [name, own, other] of [
    ['flash-sale-checkout-api', apiPods, crowdPods],
    ['flash-sale-checkout-buyers', apiPods, crowdPods],
    ['flash-sale-checkout-api-crowd', crowdPods, apiPods],
  ] as const) {
    const service = find('Service', name).spec.selector as Record<string, string>;
    t.true(matches(service, own), `${name} selects its pods`);
    t.false(matches(service, other), `${name} does not select the other lane's pods`);
    if (name === 'flash-sale-checkout-buyers') continue;
    const budget = (find('PodDisruptionBudget', name).spec.selector as { matchLabels: Record<string, string> })
      .matchLabels;
    t.true(matches(budget, own) && !matches(budget, other), `${name}'s budget covers its pods only`);
  }
});

test('the Ingress sends exactly the crowd’s paths to the crowd’s Service and the rest to the API’s pods', (t) => {
  const ingress = build('deploy/kubernetes-lanes').find((o) => o.kind === 'Ingress')!;
  const paths = ingress.spec.rules!.flatMap((r) => r.http.paths);
  const to = (service: string) => paths.filter((p) => p.backend.service.name === service).map((p) => p.path);
  t.deepEqual(to('flash-sale-checkout-api-crowd').sort(), [...CROWD_PATH_PREFIXES].sort());
  t.deepEqual(to('flash-sale-checkout-buyers'), ['/']);
  for (const p of paths) {
    t.is(p.pathType, 'Prefix');
    t.is(p.backend.service.port.name, 'http');
  }
  // What the prefixes mean, path by path (the same table docs/deploying.md gives).
  for (const p of ['/v1/queue/t1', '/queue/t1', '/v1/products/hoodie/queue', '/v1/products/hoodie'])
    t.is(laneOf(p), 'crowd', p);
  for (const p of ['/v1/purchases', '/v1/purchases/p1', '/v1/webhooks/stripe', '/p/hoodie/buy', '/v1/products', '/'])
    t.is(laneOf(p), 'buyers', p);
});
