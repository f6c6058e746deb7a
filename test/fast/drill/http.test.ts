import http from 'node:http';
import net, { type AddressInfo } from 'node:net';
import test, { type ExecutionContext } from 'ava';
import { DrillHttp } from '../../../drill/http';
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
  // Each answer takes 500 ms; with one socket, the second request waits for the first.
  const server = http.createServer((_req, res) => setTimeout(() => res.end('{}'), 500));
  const { recorder, drill } = await drillOn(t, server);

  await Promise.all([drill.call('GET', '/a', '/a'), drill.call('GET', '/b', '/b')]);

  const [a, b] = ['/a', '/b'].map((route) => recorder.latenciesOf(`GET ${route}`)[0]);
  for (const ms of [a, b]) {
    t.true(ms >= 490, `each answer took the server's 500 ms (${ms})`);
    t.true(ms < 950, `neither counts the other's turn on the socket (${ms})`);
  }
  const wait = recorder.socketWait();
  t.is(wait.count, 2);
  t.true(wait.max >= 490, `the second waited for the first (${wait.max})`);
  t.true(wait.p50 < 50, `the first did not wait (${wait.p50})`);
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
