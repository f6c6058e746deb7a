import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startStack, type Stack } from '../../dev/stack';
import { bundleWorkflows, QUIET_BUNDLE_LOGGER } from '../../worker/create-worker';
import { isAlive, seconds } from '../../dev/proc';
import { log, repoRoot, type Interrupts } from './ava';
import { inTree } from './compile';
import { LANE_CONCURRENCY, splitLanes, stackTestFiles } from './lanes';

// The stack tier: every other test file, against a throwaway stack (its own Postgres, an in-memory
// Temporal dev server) that this starts before ava and stops after it.

const DIR_PREFIX = 'flash-sale-test-';
const LAUNCHER_PID_FILE = 'launcher.pid';
/** The tier takes about nine minutes (both lanes); one that runs forty has hung, and CI has ninety in all. */
const STACK_DEADLINE_MS = 40 * 60_000;
/** ava's configuration for the stack tier's compiled files. */
const AVA_CONFIG = 'test/runner/stack.config.mjs';

/** The ava runs of a whole tier: the light lane first (a broken rule fails sooner), then the heavy. */
function lanesOf(all: string[], tree: string): { name: string; args: string[] }[] {
  const { heavy, light } = splitLanes(all);
  const lane = (name: string, files: string[], concurrency: number) => ({
    name: `, ${name} lane (${files.length} files)`,
    args: ['--concurrency', String(concurrency), ...files.map((f) => inTree(tree, f))],
  });
  return [lane('light', light, LANE_CONCURRENCY.light), lane('heavy', heavy, LANE_CONCURRENCY.heavy)];
}

/**
 * Runs the stack tier's `files` with these ava flags in one ava run, from the compiled `tree`
 * (test/runner/compile.ts); every file, when none is named and no --match, in the two lanes of
 * test/runner/lanes.ts, one after the other.
 */
export async function runStackTier(
  interrupts: Interrupts,
  tree: string,
  flags: string[],
  files: string[],
): Promise<number> {
  removeAbandonedDirs();
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), DIR_PREFIX));
  fs.writeFileSync(path.join(dataDir, LAUNCHER_PID_FILE), String(process.pid));
  // When run as root, Postgres runs as the `postgres` user, which must be able to enter this folder.
  fs.chmodSync(dataDir, 0o711);
  let stack: Stack | undefined;
  let keepDir = false;
  try {
    const started = Date.now();
    log(`starting the test stack (Postgres, Temporal dev server in memory) in ${dataDir}`);
    // The workflows are bundled once for every test file and every worker process they start, while
    // the stack starts (each would otherwise run webpack for seconds of CPU).
    const bundleFile = path.join(dataDir, 'workflow-bundle.js');
    const bundled = bundleWorkflows({ tracing: false, logger: QUIET_BUNDLE_LOGGER }).then((code) =>
      fs.writeFileSync(bundleFile, code),
    );
    try {
      const { signal } = interrupts.aborter;
      [stack] = await Promise.all([startStack({ dataDir, persistent: false, log, signal }), bundled]);
    } catch (err) {
      console.error(`[test] the test stack did not start: ${(err as Error).message}`);
      // The servers' logs stay for a look; the next run sweeps the folder.
      keepDir = !interrupts.signal;
      if (keepDir) console.error(`[test] logs kept in ${dataDir}`);
      return interrupts.exitCode(1);
    }
    log(
      `stack ready and workflows bundled in ${seconds(started)}: ${stack.databaseUrl}, Temporal ${stack.temporalAddress}`,
    );
    if (interrupts.signal) return interrupts.exitCode(1);
    const env = {
      DATABASE_URL: stack.databaseUrl,
      TEMPORAL_ADDRESS: stack.temporalAddress,
      TEMPORAL_NAMESPACE: stack.temporalNamespace,
      // Every worker of the run (in the test processes and the ones they spawn) starts from it.
      WORKFLOW_BUNDLE_PATH: bundleFile,
      TEST_TREE: tree,
    };
    const deadline = Date.now() + STACK_DEADLINE_MS;
    // A --match may name tests of one lane only: the other would find none and fail.
    const oneRun = files.length > 0 || flags.some((f) => f === '-m' || f.startsWith('--match'));
    const lanes = (
      oneRun
        ? [{ name: '', args: [...flags, ...files.map((f) => inTree(tree, f))] }]
        : lanesOf(stackTestFiles(repoRoot), tree).map((l) => ({ ...l, args: [...flags, ...l.args] }))
    ).map((l) => ({ ...l, args: ['--config', AVA_CONFIG, ...l.args] }));
    let code = 0;
    const testsStarted = Date.now();
    for (const lane of lanes) {
      log(
        `stack tier${lane.name}: running ava${files.length || flags.length ? ` ${[...flags, ...files].join(' ')}` : ''}`,
      );
      const laneStarted = Date.now();
      code = await interrupts.runAva(lane.args, env, Math.max(deadline - Date.now(), 0));
      log(`stack tier${lane.name}: ava exited with code ${code} after ${seconds(laneStarted)}`);
      if (code !== 0 || interrupts.signal) break;
    }
    if (lanes.length > 1) log(`stack tier: ava ran ${seconds(testsStarted)} in all`);
    return interrupts.exitCode(code);
  } finally {
    if (stack) {
      const stopping = Date.now();
      await stack.stop();
      log(`stack stopped in ${seconds(stopping)}`);
    }
    if (!keepDir) fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

/** Deletes the folders that earlier runs left: killed (SIGKILL) before cleaning up, or kept for their logs. */
function removeAbandonedDirs(): void {
  const readPid = (file: string): number | undefined => {
    try {
      return Number.parseInt(fs.readFileSync(file, 'utf8'), 10) || undefined;
    } catch {
      return undefined;
    }
  };
  for (const name of fs.readdirSync(os.tmpdir())) {
    if (!name.startsWith(DIR_PREFIX)) continue;
    const dir = path.join(os.tmpdir(), name);
    const launcher = readPid(path.join(dir, LAUNCHER_PID_FILE));
    if (launcher === undefined || isAlive(launcher)) continue; // in use, or just being created
    // The cluster is `postgres-<major>` (dev/postgres.ts): any of them may still be running.
    const clusters = fs.readdirSync(dir).filter((entry) => entry.startsWith('postgres'));
    const postmasters = clusters.map((c) => readPid(path.join(dir, c, 'postmaster.pid')));
    if (postmasters.some((pid) => pid !== undefined && isAlive(pid))) continue;
    log(`removing ${dir}, left by an earlier run`);
    fs.rmSync(dir, { recursive: true, force: true });
  }
}
