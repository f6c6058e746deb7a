import http from 'node:http';
import type { AddressInfo } from 'node:net';
import test from 'ava';
import { HttpClient } from '../../../bench/http-client';

test('a kept-alive connection left idle is closed by the client, before a server would close it', async (t) => {
  // A server that never closes an idle connection itself: only the client's idle timeout can.
  const server = http.createServer((_req, res) => res.end('{}'));
  server.keepAliveTimeout = 0;
  let opened = 0;
  const closed: number[] = [];
  server.on('connection', (socket) => {
    opened++;
    socket.on('close', () => closed.push(Date.now()));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => server.close());
  const client = new HttpClient(`http://127.0.0.1:${(server.address() as AddressInfo).port}`, 1, 5000, undefined, 500);
  t.teardown(() => client.close());

  t.is((await client.send('GET', '/')).status, 200);
  const answered = Date.now();
  for (let i = 0; i < 100 && closed.length < opened; i++) await new Promise((r) => setTimeout(r, 100));
  t.is(closed.length, opened, 'the idle connection was closed');
  t.true(closed[0] - answered >= 400, `not before its idle time (${closed[0] - answered} ms)`);
});
