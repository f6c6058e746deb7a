// Where the drill's clients come from when it starts the deployment itself: every API is on loopback,
// and Linux routes all of 127.0.0.0/8 there, so the crowd's connections can come from many
// addresses, as a crowd's do, and the per-address limits stay on. The abusive client (--abuser) has
// an address of its own, outside the crowd's; 127.0.0.1 is the balancer's, the emulator's and the
// drill's own calls'.
import net from 'node:net';

/** The abusive client's one address. */
export const ABUSER_ADDRESS = '127.0.0.66';

/** The crowd's addresses: 127.0.1.1 to 127.0.4.254, more than the drill ever holds connections. */
const CROWD_SUBNETS = [1, 2, 3, 4];

/** Each call the next address of the crowd's, round and round: one per new connection. */
export function crowdAddresses(): () => string {
  let n = 0;
  return () => {
    const i = n++ % (CROWD_SUBNETS.length * 254);
    return `127.0.${CROWD_SUBNETS[Math.floor(i / 254)]}.${(i % 254) + 1}`;
  };
}

/**
 * Whether a connection from 127.0.1.1 reaches a listener on 127.0.0.1 and arrives from there (Linux:
 * yes; macOS answers only on 127.0.0.1 unless aliases are added).
 */
export async function loopbackAddressesWork(): Promise<boolean> {
  const server = net.createServer();
  const seen = new Promise<string | undefined>((resolve) =>
    server.once('connection', (socket) => {
      resolve(socket.remoteAddress);
      socket.destroy();
    }),
  );
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  try {
    const port = (server.address() as net.AddressInfo).port;
    const connected = await new Promise<boolean>((resolve) => {
      const socket = net.connect({ host: '127.0.0.1', port, localAddress: '127.0.1.1' });
      socket.once('connect', () => {
        socket.destroy();
        resolve(true);
      });
      socket.once('error', () => resolve(false));
    });
    return connected && (await seen) === '127.0.1.1';
  } finally {
    server.close();
  }
}
