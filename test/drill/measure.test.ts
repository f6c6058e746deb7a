import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import test from 'ava';
import { findHaproxy, haproxyConfig } from '../../dev/balancer';
import { runCommand } from '../../dev/proc';
import { DrillHttp } from '../../drill/http';

// The pieces of the cluster rehearsal that need no cluster but a process of their own: the
// balancer's config (HAProxy), and the buyers spread over several APIs when no balancer fronts them.
// (The fault schedule, the actions and Stripe's figures: test/fast/drill/measure.test.ts.)

test('the balancer config is one HAProxy accepts', async (t) => {
  const haproxy = findHaproxy();
  if (!haproxy) return t.pass('HAProxy is not installed here');
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'haproxy-'));
  const file = path.join(dir, 'haproxy.cfg');
  fs.writeFileSync(file, haproxyConfig({ port: 18_080, servers: [{ name: 'api-1', port: 18_081 }] }));
  try {
    await runCommand(haproxy, ['-c', '-q', '-f', file]);
    t.pass();
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('without a balancer the buyers are spread over the APIs, and a dead one is left out', async (t) => {
  const hits = [0, 0];
  const servers = await Promise.all(
    [0, 1].map(
      (i) =>
        new Promise<http.Server>((resolve) => {
          const s = http.createServer((_, res) => {
            hits[i]++;
            res.setHeader('content-type', 'application/json');
            res.end(JSON.stringify({ api: i }));
          });
          s.listen(0, '127.0.0.1', () => resolve(s));
        }),
    ),
  );
  const urls = servers.map((s) => `http://127.0.0.1:${(s.address() as { port: number }).port}`);
  const client = new DrillHttp(urls, 4, () => {});
  try {
    for (let i = 0; i < 10; i++) await client.call('GET', '/', '/');
    t.deepEqual(hits, [5, 5]);
    await new Promise<void>((resolve) => {
      servers[0].closeAllConnections();
      servers[0].close(() => resolve());
    });
    const answers: string[] = [];
    for (let i = 0; i < 6; i++) {
      answers.push(
        await client.call('GET', '/', '/').then(
          (r) => `api ${String(r.body.api)}`,
          () => 'network error',
        ),
      );
    }
    t.true(answers.filter((a) => a === 'network error').length <= 1, answers.join(', '));
    t.true(answers.slice(-4).every((a) => a === 'api 1'));
  } finally {
    client.close();
    servers[1].close();
  }
});
