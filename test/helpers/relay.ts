import net from 'node:net';
import type { AddressInfo } from 'node:net';

/**
 * A TCP relay to `target` (host:port) that can freeze: while frozen no byte moves either way, and a
 * new connection is accepted but goes nowhere (a hung server, or a network that drops everything).
 */
export async function freezableRelay(target: string) {
  const [host, port] = [target.slice(0, target.lastIndexOf(':')), Number(target.slice(target.lastIndexOf(':') + 1))];
  const sockets = new Set<net.Socket>();
  let frozen = false;
  const server = net.createServer((client) => {
    const upstream = net.connect(port, host);
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on('close', () => sockets.delete(s));
      s.on('error', () => s.destroy());
    }
    client.pipe(upstream);
    upstream.pipe(client);
    // After the pipes, which resume their sources: a connection made while frozen stays frozen (paused
    // before them, it was let through, and a client cut off could connect again through the relay).
    if (frozen) for (const s of [client, upstream]) s.pause();
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const setFrozen = (f: boolean) => {
    frozen = f;
    for (const s of sockets) {
      // Unpiped while frozen, so nothing resumes a paused socket behind our back.
      if (f) s.pause();
      else s.resume();
    }
  };
  return {
    address: `127.0.0.1:${(server.address() as AddressInfo).port}`,
    freeze: () => setFrozen(true),
    thaw: () => setFrozen(false),
    close: () => {
      for (const s of sockets) s.destroy();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
