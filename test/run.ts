// `npm test`: starts a throwaway stack (its own Postgres, an in-memory Temporal dev server), runs ava
// against it, stops it. Arguments go to ava: `npm test -- test/inventory` runs one folder.
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startStack, type Stack } from '../dev/stack';
import { bundleWorkflows } from '../worker/create-worker';
import { isAlive, seconds, wrapCommand } from '../dev/proc';

const SIGNAL_EXIT_CODES: Partial<Record<NodeJS.Signals, number>> = { SIGHUP: 129, SIGINT: 130, SIGTERM: 143 };
const AVA_GRACE_MS = 10_000;
const repoRoot = path.resolve(__dirname, '..');
const DIR_PREFIX = 'flash-sale-test-';
const LAUNCHER_PID_FILE = 'launcher.pid';

const log = (line: string): void => console.log(`[test] ${line}`);

async function main(): Promise<number> {
  const aborter = new AbortController();
  let interrupted: NodeJS.Signals | undefined;
  let ava: ChildProcess | undefined;
  let avaGroup = false;
  // ava runs in a process group of its own when it can: the whole group (its workers too) can be killed.
  const killAva = (signal: NodeJS.Signals): void => {
    if (!ava?.pid) return;
    try {
      if (avaGroup) process.kill(-ava.pid, signal);
      else ava.kill(signal);
    } catch {
      // already gone
    }
  };
  const onSignal = (signal: NodeJS.Signals): void => {
    // A terminal's Ctrl-C arrives twice (directly and relayed by tsx): act on the first one only.
    if (interrupted) return;
    interrupted = signal;
    log(`${signal} received: stopping`);
    aborter.abort(new Error(`interrupted by ${signal}`));
    // SIGINT is the signal ava handles: it stops its worker processes before exiting.
    if (ava && ava.exitCode === null) {
      ava.kill('SIGINT');
      setTimeout(() => killAva('SIGKILL'), AVA_GRACE_MS).unref();
    }
  };
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) process.on(signal, onSignal);

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
    const quiet = { trace() {}, debug() {}, info() {}, warn: console.warn, error: console.error, log() {} };
    const bundled = bundleWorkflows(quiet).then((code) => fs.writeFileSync(bundleFile, code));
    try {
      [stack] = await Promise.all([startStack({ dataDir, persistent: false, log, signal: aborter.signal }), bundled]);
    } catch (err) {
      console.error(`[test] the test stack did not start: ${(err as Error).message}`);
      // The servers' logs stay for a look; the next run sweeps the folder.
      keepDir = !interrupted;
      if (keepDir) console.error(`[test] logs kept in ${dataDir}`);
      return interrupted ? (SIGNAL_EXIT_CODES[interrupted] ?? 1) : 1;
    }
    log(
      `stack ready and workflows bundled in ${seconds(started)}: ${stack.databaseUrl}, Temporal ${stack.temporalAddress}`,
    );
    if (interrupted) return SIGNAL_EXIT_CODES[interrupted] ?? 1;

    const args = process.argv.slice(2);
    log(`running ava${args.length ? ` ${args.join(' ')}` : ''}`);
    const testsStarted = Date.now();
    // ava also dies with this process (setpriv --pdeathsig), so a killed `npm test` leaves no test run behind.
    const command = wrapCommand(process.execPath, [avaCli(), ...args], { deathSignal: 'SIGINT' });
    avaGroup = command.ownGroup;
    ava = spawn(command.command, command.args, {
      cwd: repoRoot,
      stdio: 'inherit',
      detached: command.ownGroup,
      env: {
        ...process.env,
        DATABASE_URL: stack.databaseUrl,
        TEMPORAL_ADDRESS: stack.temporalAddress,
        TEMPORAL_NAMESPACE: stack.temporalNamespace,
        // Every worker of the run (in the test processes and the ones they spawn) starts from it.
        WORKFLOW_BUNDLE_PATH: bundleFile,
      },
    });
    const code = await new Promise<number>((resolve) => {
      ava!.once('error', (err) => {
        console.error(`[test] could not start ava: ${err.message}`);
        resolve(1);
      });
      ava!.once('exit', (exitCode, signal) =>
        resolve(exitCode ?? (signal ? (os.constants.signals[signal] ?? 0) + 128 : 1)),
      );
    });
    if (avaGroup) killAva('SIGKILL'); // a worker or test process that outlived ava
    log(`ava exited with code ${code} after ${seconds(testsStarted)}`);
    return interrupted ? (SIGNAL_EXIT_CODES[interrupted] ?? code) : code;
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

/** ava's own CLI, run with this Node directly (no npx in between to swallow or double signals). */
function avaCli(): string {
  return fs.realpathSync(path.join(repoRoot, 'node_modules', '.bin', 'ava'));
}

main().then(
  (code) => process.exit(code),
  (err: Error) => {
    console.error(`[test] ${err.stack ?? err.message}`);
    process.exit(1);
  },
);
