// Build step of the container image (Dockerfile): bundles the workflow code once, so the worker
// starts from the bundle (`workflowBundle`) instead of running webpack at every start. Two bundles:
// one without the workflow spans and one with them, which a worker that traces takes.
//   node dist/worker/bundle-workflows.js [dist/workflow-bundle.js [dist/workflow-bundle.traced.js]]
import fs from 'node:fs';
import { bundleWorkflows, workflowBundleFile } from './create-worker';

async function main(): Promise<void> {
  const outs = [process.argv[2] ?? workflowBundleFile(false), process.argv[3] ?? workflowBundleFile(true)];
  for (const [i, out] of outs.entries()) {
    // The interceptors go into the bundle too: a prebuilt bundle is used as it is.
    const code = await bundleWorkflows({ tracing: i === 1 });
    fs.writeFileSync(out, code);
    console.log(
      `workflow bundle${i === 1 ? ' with the workflow spans' : ''} written to ${out} (${Math.round(code.length / 1024)} KiB)`,
    );
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
