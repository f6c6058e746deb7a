import { DefaultLogger, Runtime, type WorkflowBundleOption } from '@temporalio/worker';
import { bundleWorkflows } from '../../worker/create-worker';

// The suite's Temporal: the server `npm test` started, the workflow bundle it built, a quiet runtime.

// Activity retries are expected in these tests; keep their warnings out of the output.
Runtime.install({ logger: new DefaultLogger('ERROR') });

let bundle: Promise<WorkflowBundleOption> | undefined;
/**
 * The workflow bundle: the one `npm test` built for every file (test/run.ts, WORKFLOW_BUNDLE_PATH),
 * else one per test process (bundling takes seconds).
 */
export function workflowBundle(): Promise<WorkflowBundleOption> {
  const prebuilt = process.env.WORKFLOW_BUNDLE_PATH;
  bundle ??= prebuilt
    ? Promise.resolve({ codePath: prebuilt })
    : bundleWorkflows({ tracing: false, logger: quietLogger }).then((code) => ({ code }));
  return bundle;
}

const quietLogger = {
  log() {},
  trace() {},
  debug() {},
  info() {},
  warn() {},
  error() {},
};

export function temporalAddress(): string {
  const address = process.env.TEMPORAL_ADDRESS;
  if (!address) throw new Error('TEMPORAL_ADDRESS is not set: run the suite with `npm test`, which starts Temporal');
  return address;
}
