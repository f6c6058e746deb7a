import { randomUUID } from 'node:crypto';
import test from 'ava';
import { startTestApi } from '../helpers/api-process';

// Who may read GET /metrics of the real API process (api/main.ts): with METRICS_TOKEN set, only a
// caller with it; without, anyone, which the API allows only while it listens on loopback (the
// `npm start` default), never on a published port (docker-compose.yml's HOST=0.0.0.0).

const METRICS_TOKEN = `metrics-${randomUUID()}`;

const startApi = (env: NodeJS.ProcessEnv) => startTestApi('metrics-token', env);

const scrape = (url: string, token?: string) =>
  fetch(`${url}/metrics`, token ? { headers: { authorization: `Bearer ${token}` } } : {});

test('with METRICS_TOKEN set, GET /metrics without the token or with another is 401 unauthorized, with it 200', async (t) => {
  const { api, url } = await startApi({ METRICS_TOKEN });
  try {
    await api.ready;
    for (const token of [undefined, 'not-the-token', `${METRICS_TOKEN}x`]) {
      const res = await scrape(url, token);
      t.is(res.status, 401, `token ${token}`);
      t.regex(res.headers.get('content-type') ?? '', /^application\/problem\+json/);
      t.is(res.headers.get('www-authenticate'), 'Bearer realm="metrics"');
      const body = (await res.json()) as { type: string; status: number; detail: string };
      t.like(body, { status: 401 });
      t.regex(body.type, /unauthorized$/);
      t.regex(body.detail, /metrics bearer token/);
    }
    const ok = await scrape(url, METRICS_TOKEN);
    t.is(ok.status, 200);
    t.regex(ok.headers.get('content-type') ?? '', /^text\/plain/);
    t.regex(await ok.text(), /^flashsale_sagas_started_total 0$/m);
    // The probes stay open: load balancers and the compose healthcheck carry no token.
    t.is((await fetch(`${url}/readyz`)).status, 200);
    t.is((await fetch(`${url}/healthz`)).status, 200);
  } finally {
    await api.child.stop();
  }
});

test('without METRICS_TOKEN an API on loopback serves /metrics to any local caller (npm start)', async (t) => {
  const { api, url } = await startApi({ METRICS_TOKEN: '' });
  try {
    await api.ready;
    const res = await scrape(url);
    t.is(res.status, 200);
    t.regex(await res.text(), /^flashsale_sagas_started_total /m);
  } finally {
    await api.child.stop();
  }
});

test('an API listening beyond loopback without METRICS_TOKEN refuses to start, naming it', async (t) => {
  const { api } = await startApi({ METRICS_TOKEN: '', HOST: '0.0.0.0' });
  try {
    const err = await t.throwsAsync(api.ready);
    t.regex(err?.message ?? '', /METRICS_TOKEN is required/);
    t.is((await api.child.exited).code, 1);
  } finally {
    await api.child.stop();
  }
});
