import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import test from 'ava';
import { runCommand } from '../../dev/proc';
import { DYNAMIC_CONFIG_FILE, findTemporalServer } from '../../dev/temporal-server';

// One Temporal configuration for both shapes: docker-compose.yml runs the server version the cluster
// rehearsal runs (dev/temporal-server.ts), mounts the dynamic config file the rehearsal gives its
// server, and that file holds only keys the pinned server knows (its own `validate-dynamic-config`,
// which warns of an unknown key and still exits 0). (The compose file's side, which needs no server:
// test/fast/deploy/temporal-config.test.ts.)

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
