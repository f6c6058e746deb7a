import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { findTemporalCli } from '../../dev/temporal-cli';
import { startTemporal, type TemporalServer } from '../../dev/temporal';
import { seconds } from '../../dev/proc';
import { cachedFastWorkflows } from '../fast/helpers/bundle';
import { reportWorkflowCoverage } from './coverage';
import { log, repoRoot, type Interrupts } from './ava';
import { inTree } from './compile';

// The fast tier: test/fast/, with no Postgres, emulator or browser. One local Temporal dev server in
// memory (the CLI the project fetches) serves every workflow test file, each on task queues of its
// own; the workflows are bundled once here (or the last run's bundle taken, when nothing it was built
// from changed), with short waits and coverage counted, while it starts; and the report says which
// workflow branches ran.

export const FAST_DIR = 'test/fast';
const AVA_CONFIG = path.join(FAST_DIR, 'ava.config.mjs');
/** The tier takes under a minute; one that runs five has hung. */
const FAST_DEADLINE_MS = 5 * 60_000;

/**
 * Runs the fast tier's files (`files`: all of them when empty) from the compiled `tree`
 * (test/runner/compile.ts). The whole tier must run every branch of workflows/: a file of it alone
 * only reports.
 */
export async function runFastTier(
  interrupts: Interrupts,
  tree: string,
  files: string[],
  avaFlags: string[],
): Promise<number> {
  const started = Date.now();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'flash-sale-fast-'));
  let temporal: TemporalServer | undefined;
  try {
    const bundleFile = path.join(dir, 'workflow-bundle.js');
    const { signal } = interrupts.aborter;
    const [cli, , bundle] = await Promise.all([
      findTemporalCli(log, { signal }),
      startTemporal({ log: (l) => log(`[temporal] ${l}`), signal }).then((t) => (temporal = t)),
      cachedFastWorkflows(bundleFile),
    ]);
    log(
      `fast tier: Temporal started and workflows ${bundle.built ? 'bundled' : 'bundle taken from the last run (no input changed)'} (short waits, coverage counted) in ${seconds(started)}`,
    );
    const coverageDir = path.join(repoRoot, 'coverage', 'workflows');
    fs.rmSync(coverageDir, { recursive: true, force: true });
    const code = await interrupts.runAva(
      ['--config', AVA_CONFIG, ...avaFlags, ...files.map((f) => inTree(tree, f))],
      {
        TEST_TREE: tree,
        TEMPORAL_CLI_PATH: cli,
        FAST_TEMPORAL_ADDRESS: temporal!.address,
        FAST_WORKFLOW_BUNDLE_PATH: bundleFile,
        FAST_COVERAGE_DIR: coverageDir,
      },
      FAST_DEADLINE_MS,
    );
    log(`fast tier: ava exited with code ${code} after ${seconds(started)}`);
    if (code !== 0 || interrupts.signal) return interrupts.exitCode(code);
    const verdict = await reportWorkflowCoverage(coverageDir);
    log(
      `fast tier: left out of the count on purpose, each with its reason:\n${verdict.leftOut.map((l) => `  ${l}`).join('\n')}`,
    );
    if (files.length > 0) return 0;
    const unexplained = verdict.leftOut.filter((l) => l.endsWith('NO REASON GIVEN'));
    if (unexplained.length > 0) {
      console.error(`[test] fast tier: code left out of the coverage without a reason:\n${unexplained.join('\n')}`);
      return 1;
    }
    if (verdict.missed.length > 0) {
      console.error(
        `[test] fast tier: workflow code that no test ran:\n${verdict.missed.map((m) => `  ${m}`).join('\n')}`,
      );
      return 1;
    }
    log(`fast tier: every statement, branch and function of the ${verdict.files} workflow files ran`);
    return 0;
  } finally {
    await temporal?.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}
