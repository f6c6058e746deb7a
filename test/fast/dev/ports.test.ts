import { spawn } from 'node:child_process';
import path from 'node:path';
import test from 'ava';
import { freePort, reservePort } from '../../../dev/ports';

// The ports the launchers and the tests hand their servers (dev/ports.ts): one handed to a process is
// not handed to another while that one lives, whatever the kernel says of it between two binds.

test('a port freePort handed to another process is not handed out again while that process lives', async (t) => {
  // Another process takes a port, as a launcher does before it restarts its servers on the same ports.
  const ports = path.join(__dirname, '../../../dev/ports');
  const other = spawn(
    process.execPath,
    ['-e', `require(${JSON.stringify(ports)}).freePort().then((p) => console.log(p)); setInterval(() => {}, 1000);`],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  const exited = new Promise((r) => other.once('exit', r));
  try {
    const port = await new Promise<number>((resolve, reject) => {
      other.stdout.once('data', (d: Buffer) => resolve(Number(d.toString().trim())));
      other.once('exit', (code) => reject(new Error(`the other process exited (${code})`)));
    });
    t.true(port >= 10_000 && port < 32_000, String(port));
    t.false(reservePort(port), 'reserved by a live process');
    other.kill('SIGKILL');
    await exited;
    t.true(reservePort(port), 'free again once that process is gone');
    t.false(reservePort(port), 'and now this process’s');
  } finally {
    other.kill('SIGKILL');
  }
});

test.serial(
  'freePort never hands out a port fetch() refuses to connect to (10080, one of the Fetch bad ports)',
  async (t) => {
    const draws = [(10_080 - 10_000 + 0.5) / 22_000, 0.5];
    const random = Math.random;
    Math.random = () => draws.shift() ?? random();
    try {
      const port = await freePort();
      t.not(port, 10_080);
    } finally {
      Math.random = random;
    }
  },
);
