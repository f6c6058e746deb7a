import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import { StringDecoder } from 'node:string_decoder';

/** One line of human-readable progress. */
export type Log = (line: string) => void;

/** How a child process ended. `error` is set when it could not be started at all (for example ENOENT). */
export interface ExitInfo {
  code: number | null;
  signal: NodeJS.Signals | null;
  error?: Error;
}

/** An unprivileged OS account to run a child as (only possible when this process is root). */
export interface RunAs {
  uid: number;
  gid: number;
}

/** A signal to send, and how long to wait for the process to exit before the next step. */
export type StopStep = [signal: NodeJS.Signals, waitMs: number];

export interface ChildHandle {
  readonly name: string;
  readonly pid: number;
  /** Resolves (never rejects) when the process has exited. */
  readonly exited: Promise<ExitInfo>;
  /** Set once the process has exited. */
  exitInfo(): ExitInfo | undefined;
  /** The last lines the process wrote (from its log file, or from memory when it has none). */
  output(): string;
  /** Walks the stop steps until the process exits; SIGKILL is always the last resort. Idempotent. */
  stop(): Promise<void>;
}

export interface SpawnChildOptions {
  name: string;
  command: string;
  args: string[];
  env?: NodeJS.ProcessEnv;
  cwd?: string;
  /** Append stdout and stderr here (the child keeps writing even if this process dies); else keep them in memory. */
  logFile?: string;
  /**
   * Called with each output line. With a log file, the lines are read back as the file grows: the
   * child writes to the file and never waits for this process (a busy launcher, the drill, reading a
   * pipe late would stall a child whose stdout blocks; config/log.ts).
   */
  onLine?: (line: string) => void;
  runAs?: RunAs;
  /**
   * Signal the kernel sends the child when this process dies, however it dies (SIGKILL included),
   * and the one sent from this process's 'exit' handler. Each service picks its graceful one.
   */
  deathSignal: NodeJS.Signals;
  stopSteps: StopStep[];
}

const TAIL_LINES = 60;
const live = new Map<number, NodeJS.Signals>();
let exitHookInstalled = false;
let setprivPdeathsig: boolean | undefined;

/**
 * `setpriv --pdeathsig` asks the kernel to signal the child when its parent dies, so a launcher killed
 * with SIGKILL still leaves no server behind; it also drops root privileges without an extra process
 * in between (runuser and su fork and wait, which would put a middleman between us and the server).
 */
function hasSetprivPdeathsig(): boolean {
  if (setprivPdeathsig === undefined) {
    const probe = spawnSync('setpriv', ['--help'], { encoding: 'utf8' });
    setprivPdeathsig = process.platform === 'linux' && !probe.error && /--pdeathsig/.test(probe.stdout ?? '');
  }
  return setprivPdeathsig;
}

function installExitHook(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  // Backstop for a launcher that exits without calling stop(): 'exit' handlers may only do synchronous
  // work, so this only sends each child its graceful signal; the servers then finish shutting down alone.
  process.on('exit', () => {
    for (const [pid, signal] of live) {
      try {
        process.kill(pid, signal);
      } catch {
        // already gone
      }
    }
  });
}

/**
 * Wraps a command so that it runs as `runAs` and dies with its parent. Without setpriv it runs as is,
 * and a launcher killed with SIGKILL can leave it behind (the 'exit' hook covers every other way out).
 */
export function wrapCommand(
  command: string,
  args: string[],
  opts: { runAs?: RunAs; deathSignal?: NodeJS.Signals } = {},
): { command: string; args: string[]; ownGroup: boolean } {
  if (!hasSetprivPdeathsig()) {
    if (opts.runAs) {
      throw new Error(
        'cannot drop root privileges: `setpriv` (util-linux) with --pdeathsig is required; install util-linux or run as a normal user',
      );
    }
    return { command, args, ownGroup: false };
  }
  const prefix: string[] = [];
  if (opts.runAs) prefix.push(`--reuid=${opts.runAs.uid}`, `--regid=${opts.runAs.gid}`, '--clear-groups');
  if (opts.deathSignal) prefix.push(`--pdeathsig=${opts.deathSignal.replace(/^SIG/, '')}`);
  if (prefix.length === 0) return { command, args, ownGroup: false };
  // With the kernel guarding against orphans, the child gets a process group of its own: a terminal's
  // Ctrl-C then reaches only the launcher, which stops things in order (API first, database last).
  return { command: 'setpriv', args: [...prefix, '--', command, ...args], ownGroup: Boolean(opts.deathSignal) };
}

/** Starts a long-running child (a server) that is stopped by signals and never outlives this process. */
export function spawnChild(opts: SpawnChildOptions): ChildHandle {
  installExitHook();
  const wrapped = wrapCommand(opts.command, opts.args, { runAs: opts.runAs, deathSignal: opts.deathSignal });
  const tail: string[] = [];
  let child: ChildProcess;
  let follower: { stop(): void } | undefined;
  if (opts.logFile) {
    const fd = fs.openSync(opts.logFile, 'a');
    const from = fs.fstatSync(fd).size;
    try {
      child = spawn(wrapped.command, wrapped.args, {
        cwd: opts.cwd,
        env: opts.env ?? process.env,
        stdio: ['ignore', fd, fd],
        detached: wrapped.ownGroup,
      });
    } finally {
      fs.closeSync(fd);
    }
    if (opts.onLine) follower = followLines(opts.logFile, from, opts.onLine);
  } else {
    child = spawn(wrapped.command, wrapped.args, {
      cwd: opts.cwd,
      env: opts.env ?? process.env,
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: wrapped.ownGroup,
    });
    const onLine = (line: string): void => {
      tail.push(line);
      if (tail.length > TAIL_LINES) tail.shift();
      opts.onLine?.(line);
    };
    splitLines(child.stdout!, onLine);
    splitLines(child.stderr!, onLine);
  }

  let info: ExitInfo | undefined;
  const pid = child.pid ?? -1;
  const exited = new Promise<ExitInfo>((resolve) => {
    child.once('error', (error) => {
      info ??= { code: null, signal: null, error };
      resolve(info);
    });
    child.once('exit', (code, signal) => {
      info ??= { code, signal };
      resolve(info);
    });
  });
  if (pid > 0) live.set(pid, opts.deathSignal);
  void exited.then(() => {
    live.delete(pid);
    follower?.stop();
  });

  let stopping: Promise<void> | undefined;
  const stop = (): Promise<void> => {
    stopping ??= (async () => {
      const steps: StopStep[] = [...opts.stopSteps, ['SIGKILL', 10_000]];
      for (const [signal, waitMs] of steps) {
        if (info) return;
        try {
          child.kill(signal);
        } catch {
          // exited between the check and the kill
        }
        if (await settlesWithin(exited, waitMs)) return;
      }
      throw new Error(`${opts.name} (pid ${pid}) did not exit even after SIGKILL`);
    })();
    return stopping;
  };

  return {
    name: opts.name,
    pid,
    exited,
    exitInfo: () => info,
    output: () => (opts.logFile ? readTail(opts.logFile) : tail.join('\n')),
    stop,
  };
}

/** Text in, whole non-blank lines out; `end` hands over a last line without its newline. */
function lineSplitter(onLine: (line: string) => void): { push(text: string): void; end(): void } {
  let pending = '';
  return {
    push(text) {
      pending += text;
      const lines = pending.split(/\r?\n/);
      pending = lines.pop() ?? '';
      for (const line of lines) if (line.trim()) onLine(line);
    },
    end() {
      if (pending.trim()) onLine(pending);
      pending = '';
    },
  };
}

function splitLines(stream: NodeJS.ReadableStream, onLine: (line: string) => void): void {
  const lines = lineSplitter(onLine);
  stream.setEncoding('utf8');
  stream.on('data', (chunk: string) => lines.push(chunk));
  stream.on('end', () => lines.end());
}

/** The lines appended to `file` after byte `from`, read every 100 ms, and once more when stopped. */
function followLines(file: string, from: number, onLine: (line: string) => void): { stop(): void } {
  const fd = fs.openSync(file, 'r');
  const lines = lineSplitter(onLine);
  const decoder = new StringDecoder('utf8');
  const buf = Buffer.alloc(256 * 1024);
  let offset = from;
  const read = (): void => {
    for (;;) {
      const n = fs.readSync(fd, buf, 0, buf.length, offset);
      if (n === 0) return;
      offset += n;
      lines.push(decoder.write(buf.subarray(0, n)));
    }
  };
  const timer = setInterval(read, 100);
  timer.unref();
  return {
    stop() {
      clearInterval(timer);
      read();
      lines.push(decoder.end());
      lines.end();
      fs.closeSync(fd);
    },
  };
}

async function settlesWithin(promise: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<false>((resolve) => {
    timer = setTimeout(() => resolve(false), ms);
  });
  try {
    return await Promise.race([promise.then(() => true as const), timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** The last lines of a log file (at most 16 KiB of it). */
export function readTail(file: string, lines = TAIL_LINES): string {
  try {
    const fd = fs.openSync(file, 'r');
    try {
      const size = fs.fstatSync(fd).size;
      const length = Math.min(size, 16 * 1024);
      const buf = Buffer.alloc(length);
      fs.readSync(fd, buf, 0, length, size - length);
      return buf.toString('utf8').split(/\r?\n/).filter(Boolean).slice(-lines).join('\n');
    } finally {
      fs.closeSync(fd);
    }
  } catch {
    return '';
  }
}

export function describeExit(info: ExitInfo): string {
  if (info.error) return `could not be started (${info.error.message})`;
  if (info.signal) return `was killed by ${info.signal}`;
  return `exited with code ${info.code}`;
}

/**
 * Runs a short command to completion and resolves with its stdout; rejects with the end of its output
 * when it fails. Like the servers, it runs in its own process group and dies with this process.
 */
export function runCommand(
  command: string,
  args: string[],
  opts: { runAs?: RunAs; env?: NodeJS.ProcessEnv; cwd?: string; timeoutMs?: number } = {},
): Promise<string> {
  const wrapped = wrapCommand(command, args, { runAs: opts.runAs, deathSignal: 'SIGTERM' });
  const shown = [command, ...args].join(' ');
  return new Promise((resolve, reject) => {
    const child = spawn(wrapped.command, wrapped.args, {
      env: opts.env ?? process.env,
      cwd: opts.cwd,
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: wrapped.ownGroup,
    });
    let stdout = '';
    let output = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      stdout += chunk;
      output += chunk;
    });
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
    const timer = setTimeout(() => child.kill('SIGKILL'), opts.timeoutMs ?? 120_000);
    const fail = (why: string): void => {
      const tail = output.trim().split(/\r?\n/).slice(-25).join('\n');
      reject(new Error(`\`${shown}\` ${why}${tail ? `\n${tail}` : ''}`));
    };
    child.once('error', (err) => {
      clearTimeout(timer);
      fail(`could not be started (${err.message})`);
    });
    child.once('close', (code, signal) => {
      clearTimeout(timer);
      if (code === 0) resolve(stdout);
      else fail(describeExit({ code, signal }));
    });
  });
}

/** Whether a process with this pid exists and has not exited (a zombie has). */
export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
  try {
    return !/^State:\s+Z/m.test(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
  } catch {
    return true; // no /proc (not Linux): kill(0) is all we know
  }
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Throws the signal's reason when it has been aborted (Ctrl-C while a stack is starting). */
export function throwIfAborted(signal: AbortSignal | undefined): void {
  if (signal?.aborted) throw signal.reason instanceof Error ? signal.reason : new Error('aborted');
}

export function seconds(sinceMs: number): string {
  return `${((Date.now() - sinceMs) / 1000).toFixed(1)}s`;
}

/** This code runs compiled (the stack tier's tree, test/runner/compile.ts), not as TypeScript through tsx. */
const RUNNING_COMPILED = __filename.endsWith('.js');

/**
 * Node's arguments to run one of the repository's TypeScript files (`script`: absolute, or relative
 * to the child's working directory) the way this code runs: through tsx, or, compiled, the .js file
 * the build wrote beside it (no loader hooks to start).
 */
export function nodeScript(script: string): string[] {
  return RUNNING_COMPILED ? ['--enable-source-maps', script.replace(/\.ts$/, '.js')] : ['--import', 'tsx', script];
}
