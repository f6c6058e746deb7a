import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { isAlive } from './proc';

// Free TCP ports for the servers a launcher or a test starts (Postgres, Temporal, the emulator, the
// API): found free, then reserved across processes until the one that took it is gone.

/**
 * Where freePort() looks: below the kernel's ephemeral range (32768 and up on Linux), so no outgoing
 * connection of any process (an HTTP client, a Postgres pool) can take a port between the moment it
 * was found free and the moment its server binds it: a launcher may take seconds to get there.
 * Below 32768 also fits the Temporal server's membership ports (a smallint column).
 */
const PORT_RANGE = { from: 10_000, to: 32_000 };
/**
 * The ports of that range the Fetch standard blocks (its "bad ports"): Node's fetch() refuses to
 * connect to them ("bad port"), so a server there cannot be reached by a fetch-based client or test.
 */
const FETCH_BAD_PORTS = new Set([10_080]);
/**
 * Which process freePort() handed each port to, lately: a file per port holding its pid and when.
 * A port is another server's between launches too (a launcher restarted on the same ports): the
 * kernel's bind check sees it free then, and another process's freePort() must not hand it out.
 */
const RESERVATIONS_DIR = path.join(os.tmpdir(), 'flash-sale-ports');
/** How long a port handed out stays its process's while that process lives. */
const RESERVED_MS = 10 * 60_000;

/** Takes `port` for this process, unless a process alive (this one too) took it within RESERVED_MS. */
export function reservePort(port: number): boolean {
  const file = path.join(RESERVATIONS_DIR, String(port));
  try {
    const [pid, at] = fs.readFileSync(file, 'utf8').split(' ').map(Number);
    if (Date.now() - at < RESERVED_MS && isAlive(pid)) return false;
  } catch {
    // not reserved yet
  }
  try {
    fs.mkdirSync(RESERVATIONS_DIR, { recursive: true });
    fs.writeFileSync(file, `${process.pid} ${Date.now()}`);
  } catch {
    // A temporary folder this user cannot write: the bind check is all there is.
  }
  return true;
}

function bindable(port: number, host: string): Promise<boolean> {
  return new Promise((resolve) => {
    const server = net.createServer();
    server.unref();
    server.once('error', () => resolve(false));
    server.listen(port, host, () => server.close(() => resolve(true)));
  });
}

/** A TCP port that was free a moment ago on 127.0.0.1 (callers retry if another process takes it first). */
export async function freePort(host = '127.0.0.1'): Promise<number> {
  for (let attempt = 0; attempt < 200; attempt++) {
    const port = PORT_RANGE.from + Math.floor(Math.random() * (PORT_RANGE.to - PORT_RANGE.from));
    if (FETCH_BAD_PORTS.has(port)) continue;
    if ((await bindable(port, host)) && reservePort(port)) return port;
  }
  throw new Error(`no free port between ${PORT_RANGE.from} and ${PORT_RANGE.to}`);
}
