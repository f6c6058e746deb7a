import type { AddressInfo } from 'node:net';
import test from 'ava';
import Koa from 'koa';
import { answerOutages } from '../../api/outage';
import { problemMiddleware } from '../../api/problem';
import { createLogger } from '../../config/log';

// Unit tests of api/outage.ts: what the middleware answers, served on a local port. The services are
// stand-ins here; test/api/outages.test.ts stops the real ones. (Which errors mean an outage:
// test/fast/api/outage.test.ts.)

const quiet = createLogger('test', { LOG_LEVEL: 'silent' });
const pgError = (code: string, message = 'pg') => Object.assign(new Error(message), { code, severity: 'FATAL' });

/**
 * An app with the outage middleware in front of `route`, and stand-ins for the probe's services:
 * Postgres refusing connections while `postgresDown` says so, Temporal answering after `temporalMs`.
 */
async function serve(route: Koa.Middleware, postgresDown: boolean | (() => boolean), temporalMs = 0) {
  const app = new Koa();
  const isDown = typeof postgresDown === 'function' ? postgresDown : () => postgresDown;
  const deps = {
    db: { query: async () => (isDown() ? Promise.reject(pgError('ECONNREFUSED')) : { rows: [] }) },
    temporal: {
      withDeadline: (_: number, fn: () => Promise<unknown>) => fn(),
      workflowService: { getSystemInfo: () => new Promise((r) => setTimeout(() => r({}), temporalMs)) },
    },
  };
  // What accessLog gives every request in the app: a logger (silent here).
  app.use((ctx, next) => {
    ctx.state.log = quiet;
    return next();
  });
  app.use(problemMiddleware());
  app.use(answerOutages(deps as any));
  app.use(route);
  const server = await new Promise<ReturnType<Koa['listen']>>((resolve) => {
    const s = app.listen(0, '127.0.0.1', () => resolve(s));
  });
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
  const get = async () => {
    const started = Date.now();
    const res = await fetch(url);
    return {
      status: res.status,
      ms: Date.now() - started,
      retryAfter: res.headers.get('retry-after'),
      body: await res.json(),
    };
  };
  const close = () =>
    new Promise((r) => {
      server.close(r);
      server.closeAllConnections();
    });
  return { get, close };
}

test('an outage error thrown by a route is answered 503 unavailable with Retry-After; any other error 500', async (t) => {
  let thrown: Error = pgError('57P01', 'terminating connection due to administrator command');
  const app = await serve(() => Promise.reject(thrown), false);
  try {
    const outage = await app.get();
    t.is(outage.status, 503);
    t.is(outage.retryAfter, '2');
    t.is(outage.body.type, 'unavailable');
    t.notRegex(outage.body.detail, /administrator/, 'no internals in a 5xx');
    thrown = new Error('a bug');
    t.is((await app.get()).status, 500);
  } finally {
    await app.close();
  }
});

test('a request still waiting after 1 s is answered 503 at once when Postgres is down, and left alone when it is up', async (t) => {
  // The route waits until the test lets it finish: the cut is seen as an answer that came first.
  let release: () => void = () => {};
  let finished = false;
  const slow: Koa.Middleware = async (ctx) => {
    await new Promise<void>((r) => (release = r));
    finished = true;
    ctx.body = { done: true };
  };
  const down = await serve(slow, true);
  try {
    const cut = await down.get();
    t.is(cut.status, 503);
    t.is(cut.retryAfter, '2');
    t.false(finished, 'answered while the route was still waiting');
  } finally {
    release();
    await down.close();
  }
  finished = false;
  const up = await serve(slow, false);
  try {
    // Well past the first checks (at 1 s, then every 250 ms): nothing cut it.
    const answer = up.get();
    await new Promise((r) => setTimeout(r, 1_600));
    t.false(finished);
    release();
    const waited = await answer;
    t.is(waited.status, 200);
    t.true(finished, 'the route itself answered');
  } finally {
    release();
    await up.close();
  }
});

test('after an outage, a request still waiting at 1 s is answered 503 then, though each look at the services takes 400 ms', async (t) => {
  // Temporal answers the probe after a second: each look waits its whole 400 ms and learns nothing.
  // The catch-up cut must not wait for a look: before it did, the second look (at 1.65 s) put the
  // answer past 2 s (2.05 s at the earliest; 2,008 ms in a stack-tier run of test/api/outages.test.ts).
  // At 1.5 s, with no look first, answers still came after 2.1 s on a loaded machine: the cut is at 1 s.
  const releases: (() => void)[] = [];
  const slow: Koa.Middleware = async (ctx) => {
    await new Promise<void>((r) => releases.push(r));
    ctx.body = { done: true };
  };
  let postgresDown = true;
  const app = await serve(slow, () => postgresDown, 1_000);
  try {
    t.is((await app.get()).status, 503, 'Postgres down: the outage is seen');
    postgresDown = false;
    const cut = await app.get();
    t.is(cut.status, 503);
    t.is(cut.body.type, 'unavailable');
    t.true(cut.ms >= 950 && cut.ms < 2_000, `answered after ${cut.ms} ms`);
  } finally {
    for (const release of releases) release();
    await app.close();
  }
});
