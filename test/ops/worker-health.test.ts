import { randomUUID } from 'node:crypto';
import test from 'ava';
import { runOpsCli } from '../helpers/attention';
import { startSystem } from '../helpers/system';

// The worker container's healthcheck: healthy while Temporal has seen a worker of this host poll
// the task queue. The test's worker runs in this process, so on this host.

test('worker-health exits 0 while a worker of this host polls the queue and 1 for a queue nobody polls', async (t) => {
  const sys = await startSystem();
  t.teardown(() => sys.close());
  // Give the worker a moment to make its first poll.
  let ok = await runOpsCli('worker-health', [], { TASK_QUEUE: sys.taskQueue });
  for (let i = 0; ok.code !== 0 && i < 5; i++) {
    await new Promise((r) => setTimeout(r, 1000));
    ok = await runOpsCli('worker-health', [], { TASK_QUEUE: sys.taskQueue });
  }
  t.is(ok.code, 0, ok.stderr);
  t.regex(ok.stdout, new RegExp(`polling ${sys.taskQueue}`));

  const idle = await runOpsCli('worker-health', [], { TASK_QUEUE: `nobody-${randomUUID()}` });
  t.is(idle.code, 1, idle.stdout);
  t.regex(idle.stderr, /no worker of \S+ polled task queue nobody-/);

  const elsewhere = await runOpsCli('worker-health', ['--host', 'another-host'], { TASK_QUEUE: sys.taskQueue });
  t.is(elsewhere.code, 1, 'a worker of another host does not make this container healthy');
});
