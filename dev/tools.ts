import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawnChild, describeExit, runCommand, seconds, type Log } from './proc';

/** v1.5.1 is the newest tag whose go.mod has no `replace` line, so the newest one `go install` can build. */
export const TEMPORAL_CLI_MODULE = 'github.com/temporalio/cli/cmd/temporal@v1.5.1';

/** Where the project keeps the tools it builds: `$FLASH_SALE_TOOLS_DIR`, else `~/.cache/flash-sale-checkout/bin`. */
export function toolCacheDir(env: NodeJS.ProcessEnv = process.env): string {
  return env.FLASH_SALE_TOOLS_DIR || path.join(os.homedir(), '.cache', 'flash-sale-checkout', 'bin');
}

/**
 * Finds the Temporal CLI: `TEMPORAL_CLI_PATH`, then `temporal` on PATH, then the tool cache. When none
 * exists it builds it into the tool cache with `go install` (a few minutes, once per machine).
 */
export async function findTemporalCli(log: Log, opts: { signal?: AbortSignal } = {}): Promise<string> {
  const fromEnv = process.env.TEMPORAL_CLI_PATH;
  if (fromEnv) {
    if (!isExecutable(fromEnv)) throw new Error(`TEMPORAL_CLI_PATH=${fromEnv} is not an executable file`);
    return fromEnv;
  }
  const onPath = which('temporal');
  if (onPath) return onPath;
  const cached = path.join(toolCacheDir(), 'temporal');
  if (isExecutable(cached)) return cached;
  await buildTemporalCli(toolCacheDir(), log, opts.signal);
  return cached;
}

async function buildTemporalCli(binDir: string, log: Log, signal?: AbortSignal): Promise<void> {
  const command = `go install ${TEMPORAL_CLI_MODULE}`;
  const go = which('go') ?? (isExecutable('/usr/local/go/bin/go') ? '/usr/local/go/bin/go' : undefined);
  if (!go) {
    throw new Error(
      `the Temporal CLI was not found (TEMPORAL_CLI_PATH, PATH, ${binDir}) and Go is not installed to build it ` +
        `with \`GOBIN=${binDir} ${command}\`; install Go (https://go.dev/dl) or set TEMPORAL_CLI_PATH`,
    );
  }
  const version = (await runCommand(go, ['version'])).trim();
  log(`building the Temporal CLI (first run only, a few minutes)… ${command} with ${version}`);
  fs.mkdirSync(binDir, { recursive: true });
  // Build into a private folder and rename into place, so two launchers building at once never
  // leave a half-written binary in the cache.
  const staging = fs.mkdtempSync(path.join(binDir, '.build-'));
  const started = Date.now();
  const build = spawnChild({
    name: 'go install',
    command: go,
    args: ['install', TEMPORAL_CLI_MODULE],
    env: { ...process.env, GOBIN: staging },
    onLine: (line) => log(`go: ${line.replace(/^go: /, '')}`),
    deathSignal: 'SIGTERM',
    stopSteps: [['SIGTERM', 5_000]],
  });
  const heartbeat = setInterval(() => log(`still building the Temporal CLI (${seconds(started)})…`), 30_000);
  const onAbort = (): void => void build.stop().catch(() => {});
  signal?.addEventListener('abort', onAbort, { once: true });
  try {
    const exit = await build.exited;
    if (signal?.aborted) throw new Error('aborted while building the Temporal CLI');
    const built = path.join(staging, 'temporal');
    if (exit.code !== 0 || !isExecutable(built)) {
      throw new Error(
        `building the Temporal CLI failed: \`GOBIN=${binDir} ${command}\` ${describeExit(exit)}\n` + build.output(),
      );
    }
    fs.renameSync(built, path.join(binDir, 'temporal'));
    log(`built the Temporal CLI in ${seconds(started)}: ${path.join(binDir, 'temporal')}`);
  } finally {
    clearInterval(heartbeat);
    signal?.removeEventListener('abort', onAbort);
    fs.rmSync(staging, { recursive: true, force: true });
  }
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

function isExecutable(file: string): boolean {
  try {
    if (!fs.statSync(file).isFile()) return false;
    fs.accessSync(file, fs.constants.X_OK);
    return true;
  } catch {
    return false;
  }
}
