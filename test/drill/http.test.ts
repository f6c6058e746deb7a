import http from 'node:http';
import type { AddressInfo } from 'node:net';
import test from 'ava';
import { freePort } from '../../dev/ports';
import { DrillHttp } from '../../drill/http';

// The drill's client over several APIs (a cluster without a balancer): once an API is gone (a
// fault killed it), its calls, and the checks at the end, go to an API that is alive.

async function liveApi(): Promise<{ url: string; seen: string[]; close: () => Promise<void> }> {
  const seen: string[] = [];
  const server = http.createServer((req, res) => {
    seen.push(`${req.method} ${req.url}`);
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify({ ok: true }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    seen,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

test('every call, GET or POST, goes to the API alive when the other refuses connections', async (t) => {
  const alive = await liveApi();
  // Nothing listens here: the port of an API killed with SIGKILL.
  const killed = `http://127.0.0.1:${await freePort()}`;
  const answers: string[] = [];
  const client = new DrillHttp([killed, alive.url], 4, (answer) => answers.push(answer));
  try {
    for (let i = 0; i < 6; i++) {
      const r = await client.call(i % 2 ? 'POST' : 'GET', `/v1/products/p${i}`, '/v1/products/:sku', {
        ...(i % 2 ? { body: { n: i } } : {}),
      });
      t.is(r.status, 200);
    }
  } finally {
    client.close();
    await alive.close();
  }
  t.is(alive.seen.length, 6, 'the live API had every call');
  t.deepEqual(
    answers.filter((a) => a.includes('network error')),
    [],
    'no buyer saw the dead API',
  );
});

test('with every API gone a call fails once, as a network error', async (t) => {
  const answers: string[] = [];
  const bases = [`http://127.0.0.1:${await freePort()}`, `http://127.0.0.1:${await freePort()}`];
  const client = new DrillHttp(bases, 4, (answer) => answers.push(answer));
  try {
    await t.throwsAsync(client.call('GET', '/readyz', '/readyz'), { code: 'ECONNREFUSED' });
  } finally {
    client.close();
  }
  t.deepEqual(answers, ['GET /readyz network error']);
});
