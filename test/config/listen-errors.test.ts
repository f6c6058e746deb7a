import { execFile } from 'node:child_process';
import net, { type AddressInfo } from 'node:net';
import path from 'node:path';
import test from 'ava';
import { nodeScript } from '../../dev/proc';
import { freePort, suiteServiceEnv } from '../helpers/entry-point';

// A port another process holds, or a HOST this machine cannot listen on, stops the API and the
// worker (its /healthz and /metrics server) with one line naming the variable and what to do, as a
// configuration problem does: not an uncaught error's stack trace. Postgres or Temporal out of reach
// at start stops them with a fatal line naming DATABASE_URL or TEMPORAL_ADDRESS.

const repoRoot = path.join(__dirname, '../..');

interface Ended {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs an entry point against the suite's Postgres and Temporal until it exits (at most 90 s). */
function run(script: string, env: NodeJS.ProcessEnv): Promise<Ended> {
  const base = suiteServiceEnv('listen-errors');
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      nodeScript(path.join(repoRoot, script)),
      { env: { ...process.env, ...base, METRICS_TOKEN: 'listen-metrics', ...env }, cwd: repoRoot, timeout: 90_000 },
      (err, stdout, stderr) => resolve({ code: err ? ((err as { code?: number }).code ?? null) : 0, stdout, stderr }),
    );
  });
}

/** A port held by this test process for the test's length. */
async function heldPort(t: { teardown(fn: () => void): void }): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => server.close());
  return (server.address() as AddressInfo).port;
}

const STACK_LINE = /^\s+at .+:\d+:\d+\)?$/m;

function assertOneLine(t: import('ava').ExecutionContext, ended: Ended, message: RegExp, what: string): void {
  t.is(ended.code, 1, `${what} exits 1: ${ended.stderr}`);
  const lines = ended.stderr.trim().split('\n');
  t.is(lines.length, 1, `${what}: one line on stderr:\n${ended.stderr}`);
  t.regex(lines[0], message, what);
  t.notRegex(ended.stderr + ended.stdout, STACK_LINE, `${what}: no stack trace`);
}

test('the API stops with one line naming PORT when the port is in use, and HOST when it is no address here', async (t) => {
  const port = await heldPort(t);
  const hosts = ['not-a-host', '999.1.1.1'];
  // The processes start side by side: each waits mostly on its own start.
  const [inUse, ...badHosts] = await Promise.all([
    run('api/main.ts', { PORT: String(port), HOST: '127.0.0.1' }),
    ...hosts.map((host) => run('api/main.ts', { PORT: '0', HOST: host })),
  ]);
  assertOneLine(
    t,
    inUse,
    new RegExp(`^PORT ${port} is already in use \\(EADDRINUSE\\); set PORT to a free port$`),
    'port in use',
  );
  hosts.forEach((host, i) =>
    assertOneLine(
      t,
      badHosts[i],
      new RegExp(
        `^HOST "${host.replace(/\./g, '\\.')}" is not an address of this machine \\(ENOTFOUND\\); set HOST to`,
      ),
      `HOST=${host}`,
    ),
  );
});

test('the worker stops with one line naming WORKER_METRICS_PORT or WORKER_METRICS_HOST', async (t) => {
  const port = await heldPort(t);
  const [inUse, badHost] = await Promise.all([
    run('worker/main.ts', { WORKER_METRICS_PORT: String(port), WORKER_METRICS_HOST: '127.0.0.1' }),
    run('worker/main.ts', { WORKER_METRICS_PORT: '0', WORKER_METRICS_HOST: '999.1.1.1' }),
  ]);
  assertOneLine(
    t,
    inUse,
    new RegExp(
      `^WORKER_METRICS_PORT ${port} is already in use \\(EADDRINUSE\\); set WORKER_METRICS_PORT to a free port$`,
    ),
    'port in use',
  );
  assertOneLine(
    t,
    badHost,
    /^WORKER_METRICS_HOST "999\.1\.1\.1" is not an address of this machine \(ENOTFOUND\); set WORKER_METRICS_HOST to/,
    'WORKER_METRICS_HOST=999.1.1.1',
  );
});

/** The one fatal JSON line an entry point printed before it exited 1. */
function fatalLine(t: import('ava').ExecutionContext, ended: Ended, what: string): { msg?: string } {
  t.is(ended.code, 1, `${what} exits 1: ${ended.stdout}${ended.stderr}`);
  const fatal = ended.stdout
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as { level?: string; msg?: string })
    .filter((l) => l.level === 'fatal');
  t.is(fatal.length, 1, `${what}: one fatal line\n${ended.stdout}`);
  return fatal[0] ?? {};
}

test('the API and the worker stop with a fatal line naming DATABASE_URL, TEMPORAL_ADDRESS or TEMPORAL_NAMESPACE when Postgres or Temporal cannot be reached, or Temporal has no such namespace', async (t) => {
  const port = await freePort();
  const started = ['api/main.ts', 'worker/main.ts'].map(async (script) => {
    const ports = script === 'api/main.ts' ? { PORT: '0', HOST: '127.0.0.1' } : { WORKER_METRICS_PORT: '0' };
    const [noPostgres, noTemporal] = await Promise.all([
      run(script, { ...ports, DATABASE_URL: `postgres://postgres@127.0.0.1:${port}/flashsale` }),
      // The API waits TEMPORAL_CONNECT_TIMEOUT_MS (10 s by default) for a refused Temporal; the worker does not wait.
      run(script, { ...ports, TEMPORAL_ADDRESS: `127.0.0.1:${port}`, TEMPORAL_CONNECT_TIMEOUT_MS: '500' }),
    ]);
    // A namespace the server does not have: it used to report ready and fail every sale.
    const noNamespace = await run(script, { ...ports, TEMPORAL_NAMESPACE: 'no-such-namespace' });
    return { script, noPostgres, noTemporal, noNamespace };
  });
  for (const { script, noPostgres, noTemporal, noNamespace } of await Promise.all(started)) {
    t.regex(
      fatalLine(t, noNamespace, `${script} with a namespace Temporal does not have`).msg ?? '',
      /has no namespace "no-such-namespace" \(TEMPORAL_NAMESPACE\)/,
      script,
    );
    t.regex(
      fatalLine(t, noPostgres, `${script} without Postgres`).msg ?? '',
      new RegExp(`^cannot reach Postgres at 127\\.0\\.0\\.1:${port}/flashsale \\(DATABASE_URL\\): `),
      script,
    );
    t.regex(
      fatalLine(t, noTemporal, `${script} without Temporal`).msg ?? '',
      new RegExp(`^cannot reach Temporal at 127\\.0\\.0\\.1:${port} \\(TEMPORAL_ADDRESS\\): `),
      script,
    );
  }
});
