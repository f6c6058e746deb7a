import test from 'ava';
import { createLogger } from '../../config/log';
import { captured } from '../helpers/log-lines';
import { until } from '../helpers/poll';
import { startSystem, type System } from '../helpers/system';
import { cutOff, sendRaw } from './raw-http';

// Webhook bodies the client does not send as announced: chunked past the limit (no Content-Length
// to refuse up front), and cut off half-way (the client closed the connection). Neither is an
// outage of ours nor a 500.

const log = captured();
let sys: System;
test.before(async () => {
  sys = await startSystem({ worker: false, logger: createLogger('api', { LOG_LEVEL: 'info' }, log.stream) });
});
test.after.always(async () => {
  await sys?.close();
});

const WEBHOOK = '/v1/webhooks/stripe';
const signed: [string, string][] = [
  ['Content-Type', 'application/json'],
  ['Stripe-Signature', 't=1,v1=0'],
];

test.serial(
  "a chunked body beyond the limit is 413 payload-too-large as a problem, the webhook's and JSON's",
  async (t) => {
    for (const [path, size, limit] of [
      [WEBHOOK, 600_000, 512 * 1024],
      ['/v1/purchases', 100_000, 64 * 1024],
    ] as const) {
      const res = await sendRaw(sys.apiUrl, {
        method: 'POST',
        path,
        headers: signed,
        body: Buffer.from(JSON.stringify({ pad: 'x'.repeat(size) })),
        chunked: true,
      });
      t.is(res.status, 413, `${path}: ${res.text}`);
      t.regex(res.headers['content-type'] ?? '', /^application\/problem\+json/);
      t.like(res.json, { type: 'payload-too-large', status: 413, limit });
      // The rest of the body is never read: the connection is closed, not kept for the sender.
      t.is(res.headers.connection, 'close');
    }
  },
);

test.serial('a body the client cuts off is logged as a client error, not an outage', async (t) => {
  for (const path of [WEBHOOK, '/v1/purchases']) {
    const requestId = `req-cut-${path.split('/').pop()}`;
    await cutOff(
      sys.apiUrl,
      { method: 'POST', path, headers: [...signed, ['X-Request-Id', requestId]], body: Buffer.from('{"id":') },
      10_000,
    );
    const access = await until(`the access line of the cut request to ${path}`, async () =>
      log.lines.find((l) => l.msg === 'request' && l.requestId === requestId),
    );
    t.like(access, { level: 'info', status: 400, path });
    const mine = log.lines.filter((l) => l.requestId === requestId);
    t.deepEqual(
      mine.filter((l) => l.level !== 'info' || /outage/.test(l.msg)),
      [],
      `no warning, error or outage line for ${path}`,
    );
  }
  const metrics = (await sys.api('GET', '/metrics')).body as string;
  t.notRegex(metrics, /flashsale_http_request_duration_seconds_count\{[^}]*status="5\d\d"/, 'no 5xx counted');
  // The API goes on answering as before.
  t.is((await sys.api('GET', '/readyz')).status, 200);
});
