import fs from 'node:fs';
import path from 'node:path';
import test from 'ava';
import { parse } from 'yaml';
import { DYNAMIC_CONFIG_FILE, TEMPORAL_SERVER_VERSION } from '../../../dev/temporal-server';

// One Temporal configuration for both shapes: docker-compose.yml runs the server version the cluster
// rehearsal runs (dev/temporal-server.ts) and mounts the dynamic config file the rehearsal gives its
// server. (That the pinned server knows every key of that file: test/deploy/temporal-config.test.ts.)

const root = path.resolve(__dirname, '../../..');
const compose = parse(fs.readFileSync(path.join(root, 'docker-compose.yml'), 'utf8'), { merge: true }) as {
  services: Record<
    string,
    { image?: string; configs?: Array<{ source: string; target: string }>; environment?: Record<string, string> }
  >;
  configs: Record<string, { file?: string; content?: string }>;
};

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
