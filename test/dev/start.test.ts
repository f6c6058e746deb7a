import { spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import test from 'ava';
import { freePort } from '../../dev/proc';

const root = path.resolve(__dirname, '../..');

async function until<T>(what: string, timeoutMs: number, probe: () => Promise<T | undefined>): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe().catch(() => undefined);
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

function portOpen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

// The README's first command, as a newcomer runs it: everything local, nothing configured.
test('npm start brings up the whole service, sells a unit, and Ctrl-C stops every part', async (t) => {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'flash-sale-start-'));
  fs.chmodSync(dataDir, 0o711); // the postgres user must reach the cluster inside
  const [api, temporal, ui, emulator] = [await freePort(), await freePort(), await freePort(), await freePort()];
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    FLASH_SALE_DATA_DIR: dataDir,
    PORT: String(api),
    TEMPORAL_PORT: String(temporal),
    TEMPORAL_UI_PORT: String(ui),
    STRIPE_EMULATOR_PORT: String(emulator),
  };
  // npm test points DATABASE_URL and TEMPORAL_ADDRESS at its own stack; a first run has neither.
  for (const name of [
    'DATABASE_URL',
    'TEMPORAL_ADDRESS',
    'TEMPORAL_NAMESPACE',
    'STRIPE_SECRET_KEY',
    'STRIPE_WEBHOOK_SECRET',
  ]) {
    delete env[name];
  }
  const child = spawn(process.execPath, ['--import', 'tsx', 'dev/start.ts'], {
    cwd: root,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.on('data', (d: Buffer) => (output += d.toString()));
  child.stderr.on('data', (d: Buffer) => (output += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const base = `http://127.0.0.1:${api}`;
  try {
    await until('the API to be ready', 120_000, async () => ((await fetch(`${base}/readyz`)).ok ? true : undefined));
    t.regex(output, new RegExp(`API +http://127\\.0\\.0\\.1:${api}`));
    t.regex(output, new RegExp(`Temporal UI +http://127\\.0\\.0\\.1:${ui}`));
    t.true((await fetch(`http://127.0.0.1:${ui}/`)).ok, 'the Temporal UI answers');

    const admin = { 'content-type': 'application/json', authorization: 'Bearer dev-admin-token' };
    const product = await fetch(`${base}/v1/products`, {
      method: 'POST',
      headers: admin,
      body: JSON.stringify({ sku: 'start-1', name: 'Runner', priceCents: 12900, currency: 'eur', stock: 2 }),
    });
    t.is(product.status, 201);
    const buy = await fetch(`${base}/v1/purchases`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'idempotency-key': 'start-test-1' },
      body: JSON.stringify({ sku: 'start-1', buyerId: 'newcomer' }),
    });
    const purchase = (await buy.json()) as { purchaseId: string; checkoutUrl: string };
    t.is(buy.status, 201, JSON.stringify(purchase));
    t.true(purchase.checkoutUrl.startsWith(`http://127.0.0.1:${emulator}/checkout/`));
    const session = purchase.checkoutUrl.split('/').pop();
    const pay = await fetch(`http://127.0.0.1:${emulator}/_emulator/sessions/${session}/pay`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ outcome: 'succeeded' }),
    });
    t.is(pay.status, 200);
    const status = await until('the purchase to be confirmed', 30_000, async () => {
      const body = (await (await fetch(`${base}/v1/purchases/${purchase.purchaseId}`)).json()) as { status: string };
      return body.status === 'confirmed' ? body.status : undefined;
    });
    t.is(status, 'confirmed');
  } finally {
    child.kill('SIGINT');
    const code = await Promise.race([exited, new Promise<'hung'>((r) => setTimeout(() => r('hung'), 60_000).unref())]);
    if (code === 'hung') child.kill('SIGKILL');
    t.is(code, 0, output.slice(-2000));
    for (const port of [api, temporal, ui, emulator]) t.false(await portOpen(port), `port ${port} is closed again`);
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
});
