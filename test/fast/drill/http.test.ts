import http from 'node:http';
import net, { type AddressInfo } from 'node:net';
import test, { type ExecutionContext } from 'ava';
import { sessionIdOfCheckoutUrl } from '@flash-sale/stripe-emulator';
import { DrillHttp, followToCheckout, type Answer } from '../../../drill/http';
import { Recorder } from '../../../drill/recorder';

/** The drill's client on one socket to `server` (listening here), recording into a recorder of its own. */
async function drillOn(t: ExecutionContext, server: net.Server): Promise<{ recorder: Recorder; drill: DrillHttp }> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => server.close());
  const recorder = new Recorder(Date.now());
  const drill = new DrillHttp(`http://127.0.0.1:${(server.address() as AddressInfo).port}`, 1, (answer, ms, waited) =>
    recorder.record(answer, ms, waited),
  );
  t.teardown(() => drill.close());
  return { recorder, drill };
}

test('a request that waits for one of the drill’s sockets is timed from when it got one, and its wait is counted apart', async (t) => {
  // Each answer takes a second; with one socket, the second request waits for the first. (Long, so
  // that a loaded machine's late timers stay well inside the bounds: counting the other's turn is 2 s.)
  const server = http.createServer((_req, res) => setTimeout(() => res.end('{}'), 1000));
  const { recorder, drill } = await drillOn(t, server);

  await Promise.all([drill.call('GET', '/a', '/a'), drill.call('GET', '/b', '/b')]);

  const [a, b] = ['/a', '/b'].map((route) => recorder.latenciesOf(`GET ${route}`)[0]);
  for (const ms of [a, b]) {
    t.true(ms >= 990, `each answer took the server's second (${ms})`);
    t.true(ms < 1900, `neither counts the other's turn on the socket (${ms})`);
  }
  const wait = recorder.socketWait();
  t.is(wait.count, 2);
  t.true(wait.max >= 990, `the second waited for the first (${wait.max})`);
  // The first waited only for its connection (77 ms on a loaded machine), not for another's turn.
  t.true(wait.p50 < 500, `the first did not wait for the other's second (${wait.p50})`);
});

test('a request sent on a kept-alive connection the server had closed while idle goes once more on another', async (t) => {
  // A raw server: each connection answers its first request and drops the connection on the next,
  // unread, as a server closing an idle connection when the client had just picked it again.
  let requests = 0;
  const server = net.createServer((socket) => {
    let answered = false;
    socket.on('data', () => {
      requests++;
      if (answered) return void socket.destroy();
      answered = true;
      socket.write('HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 2\r\n\r\n{}');
    });
  });
  const { recorder, drill } = await drillOn(t, server);

  t.is((await drill.call('GET', '/a', '/a')).status, 200);
  t.is((await drill.call('GET', '/b', '/b')).status, 200, 'answered on a new connection');
  t.is(requests, 3, 'the second request reached the server twice: dropped, then answered');
  t.deepEqual(
    recorder.latencyByAnswer().map((l) => l.answer),
    ['GET /a 200', 'GET /b 200'],
    'no network error recorded',
  );
});

test('following a 202 waits what each answer asks, reads past a failed read, and stops at the open checkout', async (t) => {
  const answers: Array<Answer | Error> = [
    { status: 200, body: { status: 'holding', checkoutQueue: { nextPollSeconds: 0.05 } } },
    new Error('ECONNRESET'),
    { status: 503, body: {} },
    { status: 200, body: { status: 'holding', checkoutUrl: 'http://127.0.0.1:1/checkout/cs_1' } },
  ];
  const readAt: number[] = [];
  const started = Date.now();
  const followed = await followToCheckout(
    async () => {
      readAt.push(Date.now() - started);
      const next = answers.shift()!;
      if (next instanceof Error) throw next;
      return next;
    },
    { purchaseId: 'p1', checkoutQueue: { nextPollSeconds: 0.6 } },
    { jitterMs: () => 0, givenUp: () => false },
  );
  t.deepEqual(followed, { status: 'holding', checkoutUrl: 'http://127.0.0.1:1/checkout/cs_1' });
  t.is(readAt.length, 4);
  // Lower bounds only (a timer is never early; a loaded machine makes any one late): the 202 asked for
  // longer than the half second a read waits without a pace.
  t.true(readAt[0] >= 590, `the first read waits the 202's 600 ms (${readAt[0]})`);
  t.true(readAt[1] - readAt[0] >= 40, `the second waits the answer's 50 ms (${readAt[1] - readAt[0]})`);
  t.true(readAt[2] - readAt[1] >= 40, 'a failed read keeps what the last answer asked');
  t.true(readAt[3] - readAt[2] >= 490, `an answer without a pace: half a second (${readAt[3] - readAt[2]})`);
});

test('following a 202 answers a purchase that ended without a checkout, a 404 as failed, and nothing once given up', async (t) => {
  const quick = { jitterMs: () => 0, givenUp: () => false };
  const accepted = { checkoutQueue: { nextPollSeconds: 0 } };
  t.deepEqual(await followToCheckout(async () => ({ status: 200, body: { status: 'failed' } }), accepted, quick), {
    status: 'failed',
  });
  t.deepEqual(await followToCheckout(async () => ({ status: 404, body: {} }), accepted, quick), { status: 'failed' });
  let reads = 0;
  const gaveUp = await followToCheckout(
    async () => {
      reads++;
      return { status: 200, body: { status: 'holding', checkoutQueue: { nextPollSeconds: 0 } } };
    },
    accepted,
    { jitterMs: () => 0, givenUp: () => reads >= 3 },
  );
  t.is(gaveUp, undefined);
  t.is(reads, 3);
});

test('a checkout page’s session id comes from the emulator’s URL, and any other URL is refused', (t) => {
  t.is(sessionIdOfCheckoutUrl('http://127.0.0.1:12111/checkout/cs_test_a1'), 'cs_test_a1');
  t.is(sessionIdOfCheckoutUrl('http://127.0.0.1:12111/checkout/cs_test_a1?declined=1'), 'cs_test_a1');
  t.throws(() => sessionIdOfCheckoutUrl('http://127.0.0.1:12111/checkout/cs_test_a1/pay'), {
    message: /not the emulator's checkout page/,
  });
  t.throws(() => sessionIdOfCheckoutUrl('https://checkout.stripe.com/c/pay/cs_test_a1#fidkdWx'));
});
