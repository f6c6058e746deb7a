import test from 'ava';
import { freePort, suiteServiceEnv } from '../helpers/entry-point';
import { startServiceProcess } from '../helpers/worker-process';
import { until } from '../helpers/poll';

// The API's drain on SIGTERM as an operator reads it (api/main.ts): a line for each stage (503 on
// /readyz for SHUTDOWN_GRACE_MS, the listener closed, the requests answered, stopped), and the
// draining /readyz answers, which every balancer's probe asks for, not a warn line each.

test('on SIGTERM the API says each stage of its drain, and its draining /readyz answers are no warn lines', async (t) => {
  const port = await freePort();
  const api = await startServiceProcess(
    'api/main.ts',
    {
      ...suiteServiceEnv('drain'),
      PORT: String(port),
      SHUTDOWN_GRACE_MS: '6000',
      LOG_LEVEL: 'info',
    },
    (line) => /^listening on /.test(line.msg),
  );
  const readyz = async () => {
    const res = await fetch(`http://127.0.0.1:${port}/readyz`);
    return { status: res.status, body: (await res.json()) as { status: string } };
  };
  // One probe before the signal: the first fetch of a process loads its HTTP client, which on a
  // loaded machine could outlast the grace time, and the listener would be closed by then.
  await readyz();
  const exited = new Promise<number | null>((resolve) => api.child.once('exit', resolve));
  api.child.kill('SIGTERM');
  // The balancers' probes during the grace time: 503, draining.
  const draining = await until('a draining /readyz', async () => {
    const { status, body } = await readyz();
    return status === 503 && body.status === 'draining' ? body : undefined;
  });
  t.is(draining.status, 'draining');
  t.is(await exited, 0);

  const msgs = api.lines.map((l) => l.msg);
  const stage = (re: RegExp) => msgs.findIndex((m) => re.test(m));
  const stages = [
    stage(/^SIGTERM, draining: \/readyz answers 503 for 6000 ms \(SHUTDOWN_GRACE_MS\)/),
    stage(/^drain: closing the listener, \d+ connection\(s\) open$/),
    stage(/^drain: (every request answered|requests still in flight)/),
    stage(/^stopped: /),
  ];
  t.true(
    stages.every((i, k) => i >= 0 && (k === 0 || i > stages[k - 1])),
    `each stage, in order:\n${msgs.join('\n')}`,
  );
  t.deepEqual(
    api.lines.filter((l) => l.msg === 'request' && l.level === 'warn').map((l) => l.path),
    [],
    'no warn line for the draining /readyz',
  );
});
