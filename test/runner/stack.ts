import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startStack, type Stack } from '../../dev/stack';
import { bundleWorkflows, QUIET_BUNDLE_LOGGER } from '../../worker/create-worker';
import { isAlive, seconds } from '../../dev/proc';
import { log, repoRoot, type Interrupts } from './ava';
import { inTree } from './compile';
import { LANE_CONCURRENCY, splitLanes, stackTestFiles } from './lanes';
import { describeProbe, lastWarnings, startProbe, type ProbeRecord } from './probe';

// The stack tier: every other test file, against a throwaway stack (its own Postgres, an in-memory
// Temporal dev server) that this starts before ava and stops after it.

const DIR_PREFIX = 'flash-sale-test-';
const LAUNCHER_PID_FILE = 'launcher.pid';
/** The tier takes about nine minutes (every lane); one that runs forty has hung, and CI has ninety in all. */
const STACK_DEADLINE_MS = 40 * 60_000;
/** ava's configuration for the stack tier's compiled files. */
const AVA_CONFIG = 'test/runner/stack.config.mjs';

interface Lane {
  name: string;
  args: string[];
  /** Runs beside the lane before it in the list, its output held back and printed when it ends. */
  beside?: boolean;
}

/**
 * The ava runs of a whole tier: the light lane first (a broken rule fails sooner) with the waiting
 * lane beside it, then the heavy lane.
 */
function lanesOf(all: string[], tree: string): Lane[] {
  const { heavy, light, waiting } = splitLanes(all);
  const lane = (name: string, files: string[], concurrency: number, beside = false) => ({
    name: `, ${name} lane (${files.length} files)`,
    args: ['--concurrency', String(concurrency), ...files.map((f) => inTree(tree, f))],
    beside,
  });
  return [
    lane('light', light, LANE_CONCURRENCY.light),
    ...(waiting.length ? [lane('waiting', waiting, LANE_CONCURRENCY.waiting, true)] : []),
    lane('heavy', heavy, LANE_CONCURRENCY.heavy),
  ];
}

/**
 * Runs the stack tier's `files` with these ava flags in one ava run, from the compiled `tree`
 * (test/runner/compile.ts); every file, when none is named and no --match, in the lanes of
 * test/runner/lanes.ts.
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
    const lanes: Lane[] = (
      oneRun
        ? [{ name: '', args: [...flags, ...files.map((f) => inTree(tree, f))] }]
        : lanesOf(stackTestFiles(repoRoot), tree).map((l) => ({ ...l, args: [...flags, ...l.args] }))
    ).map((l) => ({ ...l, args: ['--config', AVA_CONFIG, ...l.args] }));
    const runLane = async (lane: Lane): Promise<number> => {
      const named = files.length || flags.length ? ` ${[...flags, ...files].join(' ')}` : '';
      log(`stack tier${lane.name}: running ava${named}${lane.beside ? ' beside the lane before it' : ''}`);
      const laneStarted = Date.now();
      const held: Buffer[] = [];
      const laneCode = await interrupts.runAva(
        lane.args,
        env,
        Math.max(deadline - Date.now(), 0),
        lane.beside ? (chunk) => held.push(chunk) : undefined,
      );
      if (lane.beside) {
        log(`stack tier${lane.name}: what its ava printed`);
        process.stdout.write(Buffer.concat(held));
      }
      log(`stack tier${lane.name}: ava exited with code ${laneCode} after ${seconds(laneStarted)}`);
      return laneCode;
    };
    let code = 0;
    const testsStarted = Date.now();
    const probe = startProbe(stack);
    let looked: ProbeRecord;
    try {
      for (let i = 0; i < lanes.length; i++) {
        // A lane and the ones that run beside it, together; the first code that is not 0 stands.
        const together = [lanes[i]];
        while (lanes[i + 1]?.beside) together.push(lanes[++i]);
        const codes = await Promise.all(together.map(runLane));
        code = codes.find((c) => c !== 0) ?? 0;
        if (code !== 0 || interrupts.signal) break;
      }
    } finally {
      looked = await probe.stop();
    }
    if (lanes.length > 1) log(`stack tier: ava ran ${seconds(testsStarted)} in all`);
    // Every run says how still the stack stood at its worst; a failed one names each stall.
    const [summary, ...stalls] = describeProbe(looked);
    log(`the stack, looked at each second: ${summary}`);
    if (code !== 0) {
      for (const line of stalls) log(`  ${line}`);
      const warnings = lastWarnings(path.join(dataDir, 'temporal.log'));
      if (warnings.length) log(`the Temporal server's last ${warnings.length} warnings:`);
      for (const line of warnings) log(`  ${line}`);
    }
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
