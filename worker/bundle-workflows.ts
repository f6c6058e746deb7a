// Build step of the container image (Dockerfile): bundles the workflow code once, so the worker
// starts from the bundle (`workflowBundle`) instead of running webpack at every start.
//   node dist/worker/bundle-workflows.js dist/workflow-bundle.js
import fs from 'node:fs';
import { bundleWorkflows, WORKFLOW_BUNDLE_FILE } from './create-worker';

async function main(): Promise<void> {
  const out = process.argv[2] ?? WORKFLOW_BUNDLE_FILE;
  // The interceptors go into the bundle too: a prebuilt bundle is used as it is.
  const code = await bundleWorkflows();
  fs.writeFileSync(out, code);
  console.log(`workflow bundle written to ${out} (${Math.round(code.length / 1024)} KiB)`);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
