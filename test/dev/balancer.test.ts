import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import test from 'ava';
import { findHaproxy, startBalancer } from '../../dev/balancer';
import { balancerRouteTimes } from '../../drill/balancer-times';
import { CROWD_PATH_PREFIXES } from '../../api/lanes';

// The balancer's lanes against the real HAProxy (installed by .ci/run): two stand-in APIs, one for
// the waiting crowd and one for the buyers. The crowd's paths (api/lanes.ts) reach the crowd's API,
// everything else the buyers'; with the crowd's API gone its paths are served by the other.

async function standIn(name: string): Promise<{ server: http.Server; port: number; hits: string[] }> {
  const hits: string[] = [];
  const server = http.createServer((req, res) => {
    if (req.url !== '/readyz') hits.push(`${req.method} ${req.url}`);
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify({ api: name }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, port: (server.address() as { port: number }).port, hits };
}

function ask(base: string, method: string, p: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const req = http.request(`${base}${p}`, { method, agent: false }, (res) => {
      let body = '';
      res.on('data', (c: Buffer) => (body += c.toString()));
      res.on('end', () =>
        resolve(res.statusCode === 200 ? (JSON.parse(body) as { api: string }).api : `${res.statusCode}`),
      );
    });
    req.on('error', reject);
    req.end();
  });
}

test('with lanes the crowd’s paths go to the crowd’s API, the rest to the buyers’, and either serves both when the other is gone', async (t) => {
  const haproxy = findHaproxy();
  if (!haproxy) return t.fail('HAProxy is not installed: .ci/run installs it (apt-get install haproxy)');
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lanes-'));
  const crowd = await standIn('crowd');
  const buyers = await standIn('buyers');
  const balancer = await startBalancer({
    haproxy,
    dir,
    servers: [
      { name: 'api-1', port: crowd.port, lane: 'crowd' },
      { name: 'api-2', port: buyers.port, lane: 'buyers' },
    ],
  });
  try {
    const crowdPaths: Array<[string, string]> = [
      ['GET', '/v1/queue/tkt'],
      ['GET', '/queue/tkt'],
      ['POST', '/v1/products/hoodie/queue'],
      ['GET', '/v1/products/hoodie'],
      ['GET', '/v1/products/hoodie/waiting-room'],
    ];
    const buyerPaths: Array<[string, string]> = [
      ['POST', '/v1/purchases'],
      ['GET', '/v1/purchases/p1'],
      ['POST', '/v1/webhooks/stripe'],
      ['GET', '/purchases/p1'],
      ['POST', '/p/hoodie/buy'],
      ['GET', '/p/hoodie'],
      ['POST', '/v1/products'],
      ['GET', '/metrics'],
    ];
    t.is(CROWD_PATH_PREFIXES.length, 3, 'every prefix is asked here');
    for (const [m, p] of crowdPaths) t.is(await ask(balancer.url, m, p), 'crowd', `${m} ${p}`);
    for (const [m, p] of buyerPaths) t.is(await ask(balancer.url, m, p), 'buyers', `${m} ${p}`);

    // A line per answer with its time (the drill's balancer times), for the routes the drill reports.
    const logged = async () => {
      for (let i = 0; i < 50; i++) {
        const times = balancerRouteTimes(fs.readFileSync(balancer.logFile, 'utf8'), 0, Date.now());
        if (times.length === 4) return times;
        await new Promise((r) => setTimeout(r, 100));
      }
      return balancerRouteTimes(fs.readFileSync(balancer.logFile, 'utf8'), 0, Date.now());
    };
    t.deepEqual(
      (await logged()).map((r) => [r.route, r.count, r.p50 >= 0]),
      [
        ['POST /v1/products/:sku/queue', 1, true],
        ['GET /v1/queue/:ticket', 1, true],
        ['GET /v1/purchases/:id', 1, true],
        ['POST /v1/purchases', 1, true],
      ],
    );

    // The crowd's API goes away: its lane is served by the buyers' (the backups), nothing refused.
    crowd.server.closeAllConnections();
    await new Promise<void>((resolve) => crowd.server.close(() => resolve()));
    for (const [m, p] of crowdPaths)
      t.is(await ask(balancer.url, m, p), 'buyers', `${m} ${p} with the crowd's API gone`);
  } finally {
    await balancer.stop();
    crowd.server.close();
    buyers.server.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
