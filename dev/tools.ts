import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawnChild, describeExit, runCommand, seconds, type Log } from './proc';

/** Where the project keeps the tools it fetches or builds: `$FLASH_SALE_TOOLS_DIR`, else `~/.cache/flash-sale-checkout/bin`. */
export function toolCacheDir(env: NodeJS.ProcessEnv = process.env): string {
  return env.FLASH_SALE_TOOLS_DIR || path.join(os.homedir(), '.cache', 'flash-sale-checkout', 'bin');
}

export interface GoTool {
  /** The binary's name (on PATH, in the tool cache, and what `go install` writes). */
  binary: string;
  /** What to call it in messages. */
  title: string;
  /** The environment variable that names a binary to use instead. */
  envVar: string;
  /** `go install` targets, tried in order until one builds. */
  modules: string[];
  /** Said while building: how long it usually takes. */
  expected: string;
}

/**
 * Finds a tool: its environment variable, then PATH, then the tool cache. When none exists it is
 * built into the tool cache with `go install` (once per machine).
 */
export async function findOrBuildGoTool(tool: GoTool, log: Log, signal?: AbortSignal): Promise<string> {
  const fromEnv = process.env[tool.envVar];
  if (fromEnv) {
    if (!isExecutable(fromEnv)) throw new Error(`${tool.envVar}=${fromEnv} is not an executable file`);
    return fromEnv;
  }
  const onPath = which(tool.binary);
  if (onPath) return onPath;
  const cached = path.join(toolCacheDir(), tool.binary);
  if (isExecutable(cached)) return cached;
  log(`${tool.title} was not found (${tool.envVar}, PATH, ${toolCacheDir()}): building it`);
  await buildGoTool(tool, toolCacheDir(), log, signal);
  return cached;
}

/** Builds `tool` into `binDir` with `go install`, trying its modules in order. */
export async function buildGoTool(tool: GoTool, binDir: string, log: Log, signal?: AbortSignal): Promise<void> {
  const go = which('go') ?? (isExecutable('/usr/local/go/bin/go') ? '/usr/local/go/bin/go' : undefined);
  if (!go) {
    throw new Error(
      `Go is not installed, so ${tool.title} cannot be built with \`GOBIN=${binDir} go install ${tool.modules[0]}\`; ` +
        `install Go (https://go.dev/dl) or set ${tool.envVar}`,
    );
  }
  const version = (await runCommand(go, ['version'])).trim();
  fs.mkdirSync(binDir, { recursive: true });
  const failures: string[] = [];
  for (const module of tool.modules) {
    log(`building ${tool.title} (${tool.expected})… go install ${module} with ${version}`);
    // Build into a private folder and rename into place, so two launchers building at once never
    // leave a half-written binary in the cache.
    const staging = fs.mkdtempSync(path.join(binDir, '.build-'));
    const started = Date.now();
    const build = spawnChild({
      name: 'go install',
      command: go,
      args: ['install', module],
      env: { ...process.env, GOBIN: staging },
      onLine: (line) => log(`go: ${line.replace(/^go: /, '')}`),
      deathSignal: 'SIGTERM',
      stopSteps: [['SIGTERM', 5_000]],
    });
    const heartbeat = setInterval(() => log(`still building ${tool.title} (${seconds(started)})…`), 30_000);
    const onAbort = (): void => void build.stop().catch(() => {});
    signal?.addEventListener('abort', onAbort, { once: true });
    try {
      const exit = await build.exited;
      if (signal?.aborted) throw new Error(`aborted while building ${tool.title}`);
      const built = path.join(staging, tool.binary);
      if (exit.code === 0 && isExecutable(built)) {
        fs.renameSync(built, path.join(binDir, tool.binary));
        log(`built ${tool.title} in ${seconds(started)}: ${path.join(binDir, tool.binary)}`);
        return;
      }
      failures.push(`\`GOBIN=${binDir} go install ${module}\` ${describeExit(exit)}\n${build.output()}`);
    } finally {
      clearInterval(heartbeat);
      signal?.removeEventListener('abort', onAbort);
      fs.rmSync(staging, { recursive: true, force: true });
    }
  }
  throw new Error(`building ${tool.title} failed:\n${failures.join('\n')}`);
}

/** The first executable named `name` on PATH. */
export function which(name: string, envPath = process.env.PATH ?? ''): string | undefined {
  for (const dir of envPath.split(path.delimiter)) {
    if (!dir) continue;
    const candidate = path.join(dir, name);
    if (isExecutable(candidate)) return candidate;
  }
  return undefined;
}

export function isExecutable(file: string): boolean {
  try {
    if (!fs.statSync(file).isFile()) return false;
    fs.accessSync(file, fs.constants.X_OK);
    return true;
  } catch {
    return false;
  }
}
