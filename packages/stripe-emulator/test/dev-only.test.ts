import test from 'ava';
import { type ChildProcess, spawn } from 'node:child_process';
import path from 'node:path';
import Stripe from 'stripe';

import { sessionParams, tempStateFile, waitFor } from './harness';

const packageDir = path.resolve(__dirname, '..');

interface Run {
  child: ChildProcess;
  output: () => string;
  exited: Promise<number | null>;
}

/** `src/main.ts` (`npm start` here, `npm run emulator` in the service) as a process of its own, with only the given variables about the emulator set. */
function runMain(env: Record<string, string>): Run {
  const base = { ...process.env };
  for (const name of Object.keys(base)) {
    if (name.startsWith('STRIPE_') || name === 'NODE_ENV') delete base[name];
  }
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
    cwd: packageDir,
    env: { ...base, STRIPE_EMULATOR_PORT: '0', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout?.on('data', (d: Buffer) => (output += d.toString()));
  child.stderr?.on('data', (d: Buffer) => (output += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return { child, output: () => output, exited };
}

async function listening(run: Run, t: { teardown: (fn: () => void) => void }): Promise<string> {
  t.teardown(() => run.child.kill('SIGKILL'));
  const match = await waitFor(
    'the emulator to listen',
    // The last line main logs once it is up (JSON lines, src/log.ts).
    () =>
      (/"msg":"state (kept in|in memory)/.test(run.output())
        ? /Stripe API on (http:\/\/[^ ]+)/.exec(run.output())
        : undefined) ?? (run.child.exitCode !== null ? null : undefined),
    30_000,
  );
  if (!match) throw new Error(`the emulator exited: ${run.output()}`);
  return match[1];
}

function stripeAt(url: string): Stripe {
  const { hostname, port } = new URL(url);
  return new Stripe('sk_test_emulator', { host: hostname, port: Number(port), protocol: 'http', maxNetworkRetries: 0 });
}

test('main refuses to listen beyond loopback unless STRIPE_EMULATOR=1 says this is development', async (t) => {
  const run = runMain({ STRIPE_EMULATOR_HOST: '0.0.0.0' });
  t.is(await run.exited, 2);
  t.regex(run.output(), /refusing to start: STRIPE_EMULATOR_HOST=0\.0\.0\.0 is not a loopback address/);
  t.notRegex(run.output(), /Stripe API on/);
});

test('main refuses to start under NODE_ENV=production, even on loopback', async (t) => {
  const run = runMain({ NODE_ENV: 'production' });
  t.is(await run.exited, 2);
  t.regex(run.output(), /refusing to start: NODE_ENV is production/);
});

test('with STRIPE_EMULATOR=1 main listens on all interfaces', async (t) => {
  const run = runMain({ STRIPE_EMULATOR: '1', STRIPE_EMULATOR_HOST: '0.0.0.0' });
  const url = await listening(run, t);
  const health = await fetch(`${url}/_emulator/health`);
  t.is(health.status, 200);
  run.child.kill('SIGTERM');
  t.is(await run.exited, 0);
});

test('main keeps its state in STRIPE_EMULATOR_STATE_FILE across a stop and a start', async (t) => {
  const stateFile = tempStateFile(t);
  const first = runMain({ STRIPE_EMULATOR_STATE_FILE: stateFile });
  const firstUrl = await listening(first, t);
  t.regex(first.output(), /state kept in /);
  const session = await stripeAt(firstUrl).checkout.sessions.create(sessionParams());
  first.child.kill('SIGTERM');
  t.is(await first.exited, 0, first.output());

  const second = runMain({ STRIPE_EMULATOR_STATE_FILE: stateFile });
  const secondUrl = await listening(second, t);
  t.regex(second.output(), /state loaded from .*: 1 sessions/);
  const stripe = stripeAt(secondUrl);
  const retrieved = await stripe.checkout.sessions.retrieve(session.id);
  t.is(retrieved.status, 'open');
  const paid = await fetch(`${secondUrl}/_emulator/sessions/${session.id}/pay`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ outcome: 'succeeded' }),
  });
  t.is(paid.status, 200);
  t.is((await stripe.checkout.sessions.retrieve(session.id)).payment_status, 'paid');
  second.child.kill('SIGTERM');
  t.is(await second.exited, 0);
});
