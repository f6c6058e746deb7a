import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import test from 'ava';
import { parse } from 'yaml';
import { runCommand } from '../../dev/proc';
import { DYNAMIC_CONFIG_FILE, findTemporalServer, TEMPORAL_SERVER_VERSION } from '../../dev/temporal-server';

// One Temporal configuration for both shapes: docker-compose.yml runs the server version the cluster
// rehearsal runs (dev/temporal-server.ts), mounts the dynamic config file the rehearsal gives its
// server, and that file holds only keys the pinned server knows (its own `validate-dynamic-config`,
// which warns of an unknown key and still exits 0).

const root = path.resolve(__dirname, '../..');
const compose = parse(fs.readFileSync(path.join(root, 'docker-compose.yml'), 'utf8'), { merge: true }) as {
  services: Record<
    string,
    { image?: string; configs?: Array<{ source: string; target: string }>; environment?: Record<string, string> }
  >;
  configs: Record<string, { file?: string; content?: string }>;
};

/** What the pinned server says of a dynamic config file: its warning and error lines. */
async function complaints(file: string): Promise<string[]> {
  const { server } = await findTemporalServer((line) => console.log(`[temporal-server] ${line}`));
  const out = await runCommand(server, ['validate-dynamic-config', file], { timeoutMs: 30_000 });
  return out.split('\n').filter((l) => /warning|error/i.test(l));
}

test('every key of deploy/temporal/dynamicconfig.yaml is one the pinned Temporal server knows', async (t) => {
  t.timeout(10 * 60_000); // the first run on a machine builds the server (about 4 minutes)
  t.deepEqual(await complaints(DYNAMIC_CONFIG_FILE), []);
});

test('the check fails a key the pinned server does not know, so a pass means something', async (t) => {
  t.timeout(10 * 60_000);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'dynamic-config-'));
  const file = path.join(dir, 'dynamicconfig.yaml');
  // Gone in 1.30 (update-with-start is always on), as the compose file once had it.
  fs.writeFileSync(
    file,
    `${fs.readFileSync(DYNAMIC_CONFIG_FILE, 'utf8')}\nfrontend.enableExecuteMultiOperation:\n  - value: true\n`,
  );
  try {
    const found = await complaints(file);
    t.is(found.length, 1);
    t.regex(found[0], /unregistered key "frontend\.enableexecutemultioperation"/);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('docker-compose.yml runs the Temporal server version the rehearsal runs, with the same dynamic config', (t) => {
  const images = Object.entries(compose.services)
    .map(([name, s]) => [name, s.image ?? ''] as const)
    .filter(([, image]) => /^temporalio\/(server|admin-tools):/.test(image));
  t.true(images.some(([, image]) => image.startsWith('temporalio/server:')));
  for (const [name, image] of images) t.is(image.split(':')[1], TEMPORAL_SERVER_VERSION, `${name} runs ${image}`);

  const temporal = compose.services.temporal;
  const mounted = temporal.configs?.find((c) =>
    c.target.endsWith(`/${temporal.environment!.DYNAMIC_CONFIG_FILE_PATH}`),
  );
  t.truthy(mounted, 'the server reads the file it is given in DYNAMIC_CONFIG_FILE_PATH');
  const config = compose.configs[mounted!.source];
  t.is(config.content, undefined, 'no inline copy of the dynamic config');
  t.is(path.resolve(root, config.file!), DYNAMIC_CONFIG_FILE);
});
