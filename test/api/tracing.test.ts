import type { ChildProcess } from 'node:child_process';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomUUID } from 'node:crypto';
import test from 'ava';
import { freePort } from '../../dev/ports';
import {
  ADMIN_TOKEN,
  BOT_CHECK,
  BUYER_TOKEN_SECRET,
  SUPPORT_TOKEN,
  WEBHOOK_SECRET,
  asBuyer,
  sessionOf,
  startSystem,
} from '../helpers/system';
import { startServiceProcess, startWorkerProcess, type ServiceProcess } from '../helpers/worker-process';

// Tracing end to end (config/tracing.ts): the real API and worker processes, started with
// OTEL_EXPORTER_OTLP_ENDPOINT at an OTLP/HTTP receiver of this test's own, make and pay one
// purchase; its trace runs from the API's HTTP server span through the Temporal client's call, the
// saga's workflow and activity spans on the worker, to Postgres queries and the call to Stripe (the
// payments emulator). And the worker's log lines about it carry its trace id.

interface Span {
  service: string;
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  attributes: Record<string, unknown>;
}

const SERVER = 2;
const CLIENT = 3;

type OtlpValue = { stringValue?: string; intValue?: string | number; boolValue?: boolean; doubleValue?: number };
type OtlpAttribute = { key: string; value: OtlpValue };

function attributes(list: OtlpAttribute[] | undefined): Record<string, unknown> {
  return Object.fromEntries(
    (list ?? []).map(({ key, value }) => [
      key,
      value.stringValue ?? value.intValue ?? value.boolValue ?? value.doubleValue,
    ]),
  );
}

/** A collector: POST /v1/traces in OTLP's JSON encoding, every span kept. */
async function startReceiver(): Promise<{ url: string; spans: Span[]; close(): Promise<void> }> {
  const spans: Span[] = [];
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (d: Buffer) => (body += d.toString()));
    req.on('end', () => {
      if (req.method === 'POST' && req.url === '/v1/traces') {
        const parsed = JSON.parse(body);
        for (const rs of parsed.resourceSpans ?? []) {
          const service = String(attributes(rs.resource?.attributes)['service.name']);
          for (const ss of rs.scopeSpans ?? []) {
            for (const s of ss.spans ?? []) {
              spans.push({
                service,
                traceId: s.traceId,
                spanId: s.spanId,
                parentSpanId: s.parentSpanId || undefined,
                name: s.name,
                kind: s.kind,
                attributes: attributes(s.attributes),
              });
            }
          }
        }
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    spans,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

async function until<T>(what: string, timeoutMs: number, probe: () => T | undefined): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const found = probe();
    if (found !== undefined) return found;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

function stop(child: ChildProcess | undefined): Promise<void> {
  if (!child || child.exitCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const kill = setTimeout(() => child.kill('SIGKILL'), 15_000);
    child.once('exit', () => {
      clearTimeout(kill);
      resolve();
    });
    child.kill('SIGTERM');
  });
}

test('one purchase is one trace: API, Temporal client, workflow, activities, Postgres and Stripe', async (t) => {
  const receiver = await startReceiver();
  const sys = await startSystem({ worker: false });
  let api: ServiceProcess | undefined;
  let worker: ServiceProcess | undefined;
  try {
    const otel = { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_BSP_SCHEDULE_DELAY: '200', LOG_LEVEL: 'info' };
    const apiUrl = `http://127.0.0.1:${await freePort()}`;
    [api, worker] = await Promise.all([
      startServiceProcess(
        'api/main.ts',
        {
          DATABASE_URL: sys.databaseUrl,
          TASK_QUEUE: sys.taskQueue,
          STRIPE_SECRET_KEY: 'sk_test_emulator',
          STRIPE_API_URL: sys.emulator.url,
          STRIPE_EMULATOR: '1',
          PORT: new URL(apiUrl).port,
          HOST: '127.0.0.1',
          STRIPE_WEBHOOK_SECRET: WEBHOOK_SECRET,
          ADMIN_TOKEN,
          SUPPORT_TOKEN,
          BUYER_TOKEN_SECRET,
          BOT_CHECK_SECRET: BOT_CHECK.secret,
          ...otel,
        },
        (line) => /listening on http/.test(line.msg),
      ),
      // The suite's bundle has no workflow spans (a worker that traces refuses it): this one bundles its own.
      startWorkerProcess(sys, { ...otel, WORKFLOW_BUNDLE_PATH: '' }),
    ]);
    sys.emulator.setWebhookUrl(`${apiUrl}/v1/webhooks/stripe`);

    const sku = await sys.createProduct();
    const res = await fetch(`${apiUrl}/v1/purchases`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'idempotency-key': randomUUID(),
        ...(await asBuyer('trace-buyer')),
      },
      body: JSON.stringify({ sku }),
    });
    const body = (await res.json()) as { purchaseId: string };
    t.true(res.status < 300, `the purchase is placed: ${res.status} ${JSON.stringify(body)}`);
    const requestId = res.headers.get('x-request-id');
    t.truthy(requestId, 'X-Request-Id is still answered');
    await sys.pay(await sessionOf(sys.db, body.purchaseId), 'succeeded');
    await sys.waitForPurchase(body.purchaseId, (p) => p.status === 'confirmed');

    const isPurchasePost = (s: Span) =>
      s.service === 'flash-sale-api' &&
      s.kind === SERVER &&
      Object.values(s.attributes).includes('POST') &&
      Object.values(s.attributes).some((v) => typeof v === 'string' && v.endsWith('/v1/purchases'));
    const root = await until('the API server span of POST /v1/purchases', 20_000, () =>
      receiver.spans.find(isPurchasePost),
    );
    const ofTrace = () => receiver.spans.filter((s) => s.traceId === root.traceId);
    const want: [string, (s: Span) => boolean][] = [
      [
        'the Temporal client call (api)',
        (s) => s.service === 'flash-sale-api' && /^UpdateWithStartWorkflow|^StartWorkflow/.test(s.name),
      ],
      [
        'the workflow run (worker)',
        (s) => s.service === 'flash-sale-worker' && s.name === 'RunWorkflow:purchaseWorkflow',
      ],
      [
        'an activity scheduled by the workflow',
        (s) => s.service === 'flash-sale-worker' && s.name.startsWith('StartActivity:'),
      ],
      ['an activity run (worker)', (s) => s.service === 'flash-sale-worker' && s.name.startsWith('RunActivity:')],
      [
        'a Postgres query (worker)',
        (s) =>
          s.service === 'flash-sale-worker' &&
          /postgres/i.test(String(s.attributes['db.system'] ?? s.attributes['db.system.name'])),
      ],
      [
        'a Postgres query (api)',
        (s) =>
          s.service === 'flash-sale-api' &&
          /postgres/i.test(String(s.attributes['db.system'] ?? s.attributes['db.system.name'])),
      ],
      [
        'the call to Stripe (the emulator)',
        (s) =>
          s.service === 'flash-sale-worker' &&
          s.kind === CLIENT &&
          Object.values(s.attributes).some((v) => String(v).includes(new URL(sys.emulator.url).port)),
      ],
    ];
    await until('every span of the purchase in one trace', 20_000, () =>
      want.every(([, match]) => ofTrace().some(match)) ? true : undefined,
    ).catch(() => undefined);
    const spans = ofTrace();
    for (const [what, match] of want) {
      t.true(
        spans.some(match),
        `${what} is in the trace; it has: ${[...new Set(spans.map((s) => `${s.service} ${s.name}`))].join(', ')}`,
      );
    }
    // Every span of the trace but the root has its parent in it: one tree, not fragments.
    const ids = new Set(spans.map((s) => s.spanId));
    const orphans = spans.filter((s) => s !== root && (!s.parentSpanId || !ids.has(s.parentSpanId)));
    t.deepEqual(
      orphans.map((s) => `${s.service} ${s.name}`),
      [],
      'every span hangs from the POST',
    );
    t.log(`${spans.length} spans: ${[...new Set(spans.map((s) => `${s.service} ${s.name}`))].sort().join('; ')}`);

    // The log lines of the purchase carry the trace id, and the request id still.
    const traced = worker.lines.filter((l) => l.trace_id === root.traceId);
    t.true(
      traced.some((l) => l.msg === 'activity done'),
      "the worker's activity lines carry the trace id",
    );
    t.true(
      traced.some((l) => l.requestId === requestId),
      'and the request id of the POST, as before',
    );
    t.true(
      api.lines.some((l) => l.trace_id === root.traceId && l.requestId === requestId),
      "the API's lines about the POST carry both",
    );
  } finally {
    await Promise.all([stop(api?.child), stop(worker?.child)]);
    await sys.close();
    await receiver.close();
  }
});
