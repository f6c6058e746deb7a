import { createHash, randomUUID } from 'node:crypto';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { bundleWorkflowCode } from '@temporalio/worker';
import { WorkflowCoverage } from '@temporalio/nyc-test-coverage';
import { workflowInterceptorModules } from '../../../worker/create-worker';
import type { CoverageCounts, CoverageSinks, FileCoverageData } from './coverage-interceptor';

// The fast tier's workflow bundle: the workflows as production bundles them, with two changes made
// by webpack, not by the code: each statement and branch counted (Istanbul, through Temporal's
// coverage package's instrumenting loader, with an interceptor of our own that sends the counts:
// ./coverage-interceptor.ts), and the workflows' waits (workflows/durations.ts) swapped for short
// ones (test/fast/durations.ts). `npm test` builds it once for every fast test file, or takes the one
// it built last from disk when no file webpack read has changed since (`cachedFastWorkflows`).

const g = globalThis as unknown as { __coverage__?: Record<string, unknown> };
const INTERCEPTOR = require.resolve('./coverage-interceptor');

/** The counts the workflows of one test process sent (through the `fastCoverage` sink), merged. */
export class FastCoverage {
  private readonly files: Record<string, FileCoverageData> = {};

  /** The sink the bundle's interceptor calls; `duringReplay`: counted when a history is replayed too. */
  sinks(duringReplay = false) {
    return {
      fastCoverage: {
        counted: {
          fn: (_info: unknown, ...[files, counts]: Parameters<CoverageSinks['fastCoverage']['counted']>) => {
            for (const [file, data] of Object.entries(files)) {
              if (this.files[file]) this.add(this.files[file], data);
              else this.files[file] = data;
            }
            for (const [file, moved] of Object.entries(counts)) {
              const into = this.files[file];
              if (!into) throw new Error(`coverage counts of ${file} came before its data`);
              this.add(into, moved);
            }
          },
          callDuringReplay: duringReplay,
        },
      },
    };
  }

  private add(into: CoverageCounts, moved: Partial<CoverageCounts>): void {
    for (const [id, n] of Object.entries(moved.s ?? {})) into.s[id] = (into.s[id] ?? 0) + n;
    for (const [id, n] of Object.entries(moved.f ?? {})) into.f[id] = (into.f[id] ?? 0) + n;
    for (const [id, paths] of Object.entries(moved.b ?? {})) {
      const to = (into.b[id] ??= paths.map(() => 0));
      paths.forEach((n, i) => (to[i] = (to[i] ?? 0) + n));
    }
  }

  /** Leaves this process's counts where `npm test` merges and reports them (FAST_COVERAGE_DIR). */
  write(): void {
    const dir = process.env.FAST_COVERAGE_DIR;
    if (!dir) return;
    fs.mkdirSync(dir, { recursive: true });
    fs.writeFileSync(path.join(dir, `${process.pid}-${randomUUID()}.json`), JSON.stringify(this.files));
  }
}

const quiet = { trace() {}, debug() {}, info() {}, warn: console.warn, error: console.error, log() {} };

type WebpackConfig = import('webpack').Configuration;

/**
 * Compiles for ES2022 rather than the bundler's ES2017, so that what Istanbul counts are the
 * source's branches (`a?.b` stays one expression, not a conditional the compiler wrote); and leaves
 * the coverage interceptor itself out of the count.
 */
function countSourceBranches(config: WebpackConfig): WebpackConfig {
  for (const rule of config.module?.rules ?? []) {
    const use = rule && typeof rule === 'object' ? rule.use : undefined;
    if (!use || typeof use !== 'object' || Array.isArray(use)) continue;
    if (String(use.loader).includes('swc-loader')) {
      const options = use.options as { jsc?: { target?: string } };
      if (options.jsc) options.jsc.target = 'es2022';
    }
    if (String(use.loader).includes('nyc-test-coverage') && rule && typeof rule === 'object') {
      rule.exclude = [
        ...(Array.isArray(rule.exclude) ? rule.exclude : rule.exclude ? [rule.exclude] : []),
        INTERCEPTOR,
      ];
    }
  }
  return config;
}

/** Builds the bundle; `read`, when given, receives every file webpack read for it. */
export async function bundleFastWorkflows(read?: (files: string[]) => void): Promise<string> {
  // The coverage package instruments only when Istanbul's global exists.
  g.__coverage__ ??= {};
  const coverage = new WorkflowCoverage();
  const webpack = createRequire(require.resolve('@temporalio/worker'))('webpack') as typeof import('webpack');
  const shortWaits = new webpack.NormalModuleReplacementPlugin(
    /[\\/]workflows[\\/]durations\.ts$/,
    require.resolve('../durations'),
  );
  const options = coverage.augmentBundleOptions({
    workflowsPath: require.resolve('../../../workflows'),
    workflowInterceptorModules: workflowInterceptorModules(true),
    logger: quiet,
    webpackConfigHook: (config) => ({
      ...countSourceBranches(config),
      plugins: [
        ...(config.plugins ?? []),
        shortWaits,
        {
          apply: (compiler: import('webpack').Compiler) =>
            compiler.hooks.afterEmit.tap('fast-bundle-inputs', (compilation) =>
              read?.([...compilation.fileDependencies].filter((f) => fs.existsSync(f) && fs.statSync(f).isFile())),
            ),
        },
      ],
    }),
  });
  const { code } = await bundleWorkflowCode({
    ...options,
    workflowInterceptorModules: (options.workflowInterceptorModules ?? []).map((m) =>
      m === coverage.interceptorModule ? INTERCEPTOR : m,
    ),
  });
  return code;
}

const REPO_ROOT = path.resolve(__dirname, '..', '..', '..');
/**
 * Where the last bundle is kept between runs, with the files it was built from: one folder per
 * checkout (the bundle names its files by their absolute paths, which coverage reports by).
 */
const CACHE_DIR = path.join(
  os.tmpdir(),
  `flash-sale-fast-bundle-${os.userInfo().uid}-${createHash('sha256').update(REPO_ROOT).digest('hex').slice(0, 12)}`,
);

function hashFiles(files: string[]): string | undefined {
  const hash = createHash('sha256');
  for (const file of [...files].sort()) {
    let content: Buffer;
    try {
      content = fs.readFileSync(file);
    } catch {
      return undefined; // gone: build again
    }
    hash.update(file).update('\0').update(content).update('\0');
  }
  return hash.digest('hex');
}

/**
 * The bundle, written to `dest`: the one built last when every file webpack read for it (the
 * workflows, their imports, the SDK's files, the loaders' options are in the key: this file and the
 * package lock) is as it was, else built anew and kept for the next run. `built` says which.
 */
export async function cachedFastWorkflows(dest: string): Promise<{ built: boolean }> {
  // What shapes the bundle besides its sources: how it is built, and the versions of the tools.
  const recipe = [__filename, INTERCEPTOR, path.join(REPO_ROOT, 'package-lock.json')];
  const manifestFile = path.join(CACHE_DIR, 'inputs.json');
  const codeFile = (hash: string) => path.join(CACHE_DIR, `bundle-${hash}.js`);
  try {
    const manifest = JSON.parse(fs.readFileSync(manifestFile, 'utf8')) as { files: string[]; hash: string };
    const hash = hashFiles([...recipe, ...manifest.files]);
    if (hash === manifest.hash) {
      fs.copyFileSync(codeFile(hash), dest);
      return { built: false };
    }
  } catch {
    // no bundle kept, or another run replacing it: build one
  }
  let inputs: string[] = [];
  const code = await bundleFastWorkflows((files) => (inputs = files));
  fs.writeFileSync(dest, code);
  const hash = hashFiles([...recipe, ...inputs]);
  if (hash && inputs.length > 0) {
    // Each file is written beside and renamed into place, the code under its key: a run reading the
    // cache never sees half a file, nor the code of other sources.
    fs.mkdirSync(CACHE_DIR, { recursive: true });
    const tmp = path.join(CACHE_DIR, `.${process.pid}-${randomUUID()}`);
    fs.writeFileSync(tmp, code);
    fs.renameSync(tmp, codeFile(hash));
    fs.writeFileSync(tmp, JSON.stringify({ files: inputs, hash }));
    fs.renameSync(tmp, manifestFile);
    for (const old of fs.readdirSync(CACHE_DIR)) {
      if (old.startsWith('bundle-') && old !== path.basename(codeFile(hash))) {
        fs.rmSync(path.join(CACHE_DIR, old), { force: true });
      }
    }
  }
  return { built: true };
}
