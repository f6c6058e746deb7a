import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { bundleWorkflowCode } from '@temporalio/worker';
import { WorkflowCoverage } from '@temporalio/nyc-test-coverage';
import { WORKFLOW_INTERCEPTOR_MODULES } from '../../../worker/create-worker';

// The fast tier's workflow bundle: the workflows as production bundles them, with two changes made
// by webpack, not by the code: each statement and branch counted (Istanbul, through Temporal's
// coverage package), and the workflows' waits (workflows/durations.ts) swapped for short ones
// (test/fast/durations.ts). `npm test` builds it once for every fast test file.

type Coverage = Record<string, unknown>;
const g = globalThis as unknown as { __coverage__?: Coverage };

/** Turns coverage on in this process: the coverage package instruments and collects only when Istanbul's global exists. */
export function enableCoverage(): WorkflowCoverage {
  g.__coverage__ ??= {};
  return new WorkflowCoverage();
}

/** Leaves this process's counts where `npm test` merges and reports them (FAST_COVERAGE_DIR). */
export function writeCoverage(coverage: WorkflowCoverage): void {
  const dir = process.env.FAST_COVERAGE_DIR;
  coverage.mergeIntoGlobalCoverage();
  if (!dir) return;
  fs.mkdirSync(dir, { recursive: true });
  fs.writeFileSync(path.join(dir, `${process.pid}-${randomUUID()}.json`), JSON.stringify(g.__coverage__ ?? {}));
}

const quiet = { trace() {}, debug() {}, info() {}, warn: console.warn, error: console.error, log() {} };

type WebpackConfig = import('webpack').Configuration;

/**
 * Compiles for ES2022 rather than the bundler's ES2017, so that what Istanbul counts are the
 * source's branches (`a?.b` stays one expression, not a conditional the compiler wrote).
 */
function countSourceBranches(config: WebpackConfig): WebpackConfig {
  for (const rule of config.module?.rules ?? []) {
    const use = rule && typeof rule === 'object' ? rule.use : undefined;
    if (use && typeof use === 'object' && !Array.isArray(use) && String(use.loader).includes('swc-loader')) {
      const options = use.options as { jsc?: { target?: string } };
      if (options.jsc) options.jsc.target = 'es2022';
    }
  }
  return config;
}

export async function bundleFastWorkflows(): Promise<string> {
  const coverage = enableCoverage();
  const webpack = createRequire(require.resolve('@temporalio/worker'))('webpack') as typeof import('webpack');
  const shortWaits = new webpack.NormalModuleReplacementPlugin(
    /[\\/]workflows[\\/]durations\.ts$/,
    require.resolve('../durations'),
  );
  const { code } = await bundleWorkflowCode(
    coverage.augmentBundleOptions({
      workflowsPath: require.resolve('../../../workflows'),
      workflowInterceptorModules: WORKFLOW_INTERCEPTOR_MODULES,
      logger: quiet,
      webpackConfigHook: (config) => ({
        ...countSourceBranches(config),
        plugins: [...(config.plugins ?? []), shortWaits],
      }),
    }),
  );
  return code;
}
