import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import test from 'ava';

// docs/monitoring: the alert rules checked and unit-tested by Prometheus's own promtool (the cases
// are in alerts.test.yml beside them). (That every metric they name is exported by the code:
// test/fast/deploy/monitoring.test.ts.)

const root = path.resolve(__dirname, '../..');
const monitoring = path.join(root, 'docs/monitoring');

/** promtool on PATH (Debian's `prometheus` package; .ci/run installs it), run in docs/monitoring. */
async function promtool(...args: string[]): Promise<{ ok: boolean; output: string }> {
  try {
    const { stdout, stderr } = await promisify(execFile)('promtool', args, { cwd: monitoring });
    return { ok: true, output: stdout + stderr };
  } catch (err) {
    const e = err as NodeJS.ErrnoException & { stdout?: string; stderr?: string };
    if (e.code === 'ENOENT')
      throw new Error('promtool is not installed (apt-get install prometheus; .ci/run does)', { cause: err });
    return { ok: false, output: `${e.stdout ?? ''}${e.stderr ?? ''}` };
  }
}

test('promtool accepts the alert rules', async (t) => {
  const { ok, output } = await promtool('check', 'rules', 'alerts.yml');
  t.true(ok, output);
});

test('the alert rules pass their unit tests (alerts.test.yml): the first workflow task failure pages, so does a trickle of failed Stripe calls, a checkout line longer than its holds or growing, sessions without Stripe events, a worker that lost Temporal; each quiet when healthy', async (t) => {
  const { ok, output } = await promtool('test', 'rules', 'alerts.test.yml');
  t.true(ok, output);
  t.regex(output, /SUCCESS/);
});
