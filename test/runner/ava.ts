import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { wrapCommand } from '../../dev/proc';

// ava as a child of `npm test` (a lane may run beside another: test/runner/lanes.ts), stopped with
// the run when `npm test` is interrupted, and never left behind (setpriv --pdeathsig) when it is killed.

export const repoRoot = path.resolve(__dirname, '..', '..');
const AVA_GRACE_MS = 10_000;
/** How long the end of a piped ava's output may take to arrive after it exited. */
const PIPE_DRAIN_MS = 5_000;
/**
 * V8's compiled code for every module a test process loads, kept on disk (Node's module compile
 * cache): each of the ~140 test files and the processes they start loads the same ~1,500 modules.
 */
const COMPILE_CACHE_DIR = path.join(os.tmpdir(), 'flash-sale-compile-cache');
/**
 * Node never drops an entry of that cache, and each clone, at a path of its own, adds its modules
 * again (about 3,500 entries, 25 MB): past this many entries the cache starts over.
 */
const COMPILE_CACHE_MAX_ENTRIES = 40_000;

/** Empties the compile cache when it has grown past COMPILE_CACHE_MAX_ENTRIES (one folder per Node version inside). */
export function trimCompileCache(): void {
  if (!fs.existsSync(COMPILE_CACHE_DIR)) return;
  const entries = fs
    .readdirSync(COMPILE_CACHE_DIR, { withFileTypes: true })
    .filter((d) => d.isDirectory())
    .reduce((n, version) => n + fs.readdirSync(path.join(COMPILE_CACHE_DIR, version.name)).length, 0);
  if (entries <= COMPILE_CACHE_MAX_ENTRIES) return;
  log(`the compile cache holds ${entries} entries: emptied`);
  fs.rmSync(COMPILE_CACHE_DIR, { recursive: true, force: true });
}
export const SIGNAL_EXIT_CODES: Partial<Record<NodeJS.Signals, number>> = { SIGHUP: 129, SIGINT: 130, SIGTERM: 143 };

export const log = (line: string): void => console.log(`[test] ${line}`);

interface AvaRun {
  child: ChildProcess;
  /** Whether it runs in a process group of its own (its workers can be killed with it). */
  group: boolean;
}

/** The signal that interrupted `npm test`, once one has; stops the ava runs in progress. */
export class Interrupts {
  signal?: NodeJS.Signals;
  readonly aborter = new AbortController();
  private readonly runs = new Set<AvaRun>();

  constructor() {
    for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) process.on(signal, (s) => this.on(s));
  }

  /** The exit code for an interrupted run, else `code`. */
  exitCode(code: number): number {
    return this.signal ? (SIGNAL_EXIT_CODES[this.signal] ?? code) : code;
  }

  private on(signal: NodeJS.Signals): void {
    // A terminal's Ctrl-C arrives twice (directly and relayed by tsx): act on the first one only.
    if (this.signal) return;
    this.signal = signal;
    log(`${signal} received: stopping`);
    this.aborter.abort(new Error(`interrupted by ${signal}`));
    // SIGINT is the signal ava handles: it stops its worker processes before exiting.
    for (const run of this.runs) {
      if (run.child.exitCode !== null) continue;
      run.child.kill('SIGINT');
      setTimeout(() => kill(run, 'SIGKILL'), AVA_GRACE_MS).unref();
    }
  }

  /**
   * Runs ava with these arguments and environment; its exit code. A run still going after
   * `deadlineMs` is killed (a test process that hangs past ava's own timeout must not hold CI).
   * With `output`, what ava prints goes there instead of to this process's own stdout and stderr.
   */
  async runAva(
    args: string[],
    env: NodeJS.ProcessEnv,
    deadlineMs: number,
    output?: (chunk: Buffer) => void,
  ): Promise<number> {
    const command = wrapCommand(process.execPath, [avaCli(), ...args], { deathSignal: 'SIGINT' });
    const child = spawn(command.command, command.args, {
      cwd: repoRoot,
      stdio: output ? ['inherit', 'pipe', 'pipe'] : 'inherit',
      detached: command.ownGroup,
      env: { NODE_COMPILE_CACHE: COMPILE_CACHE_DIR, ...process.env, ...env },
    });
    child.stdout?.on('data', output ?? (() => {}));
    child.stderr?.on('data', output ?? (() => {}));
    const run: AvaRun = { child, group: command.ownGroup };
    this.runs.add(run);
    let overdue = false;
    const watchdog = setTimeout(() => {
      overdue = true;
      console.error(`[test] ava still running after ${Math.round(deadlineMs / 1000)} s: killed`);
      kill(run, 'SIGKILL');
    }, deadlineMs);
    const code = await new Promise<number>((resolve) => {
      child.once('error', (err) => {
        console.error(`[test] could not start ava: ${err.message}`);
        resolve(1);
      });
      child.once('exit', (exitCode, signal) =>
        resolve(exitCode ?? (signal ? (os.constants.signals[signal] ?? 0) + 128 : 1)),
      );
    });
    clearTimeout(watchdog);
    if (command.ownGroup) kill(run, 'SIGKILL'); // a worker or test process that outlived ava
    // What ava printed last may still be in its pipes.
    if (output && !(child.stdout?.closed && child.stderr?.closed)) {
      await new Promise<void>((resolve) => {
        child.once('close', () => resolve());
        setTimeout(resolve, PIPE_DRAIN_MS).unref();
      });
    }
    this.runs.delete(run);
    return overdue ? 1 : code;
  }
}

/** Signals an ava run: its whole process group (its workers too) when it has one of its own. */
function kill(run: AvaRun, signal: NodeJS.Signals): void {
  if (!run.child.pid) return;
  try {
    if (run.group) process.kill(-run.child.pid, signal);
    else run.child.kill(signal);
  } catch {
    // already gone
  }
}

/** ava's own CLI, run with this Node directly (no npx in between to swallow or double signals). */
function avaCli(): string {
  return fs.realpathSync(path.join(repoRoot, 'node_modules', '.bin', 'ava'));
}
