import fs from 'node:fs';
import path from 'node:path';
import { describeExit, freePort, runCommand, seconds, sleep, spawnChild, type ChildHandle, type Log } from './proc';
import { toolCacheDir, which } from './tools';

/** Stripe's official mock: stateless, but it validates each request against Stripe's OpenAPI spec. */
export const STRIPE_MOCK_MODULE = 'github.com/stripe/stripe-mock';
/** Tried when `@latest` cannot be built; v0.203.0 is the newest tag seen to build with Go 1.26. */
export const STRIPE_MOCK_PINNED_VERSION = 'v0.203.0';

export interface StripeMock {
  /** http://127.0.0.1:PORT, for `createStripe(secretKey, url)`. */
  url: string;
  /** Stops the process (SIGTERM, then SIGKILL). Idempotent. */
  stop(): Promise<void>;
}

/**
 * Finds stripe-mock: `STRIPE_MOCK_PATH`, then `stripe-mock` on PATH, then the tool cache. When none exists
 * it builds it into the tool cache with `go install` (seconds, once per machine).
 */
export async function findOrBuildStripeMock(log: Log): Promise<string> {
  const fromEnv = process.env.STRIPE_MOCK_PATH;
  if (fromEnv) {
    if (!isExecutable(fromEnv)) throw new Error(`STRIPE_MOCK_PATH=${fromEnv} is not an executable file`);
    return fromEnv;
  }
  const onPath = which('stripe-mock');
  if (onPath) return onPath;
  const cached = path.join(toolCacheDir(), 'stripe-mock');
  if (isExecutable(cached)) return cached;
  await buildStripeMock(toolCacheDir(), log);
  return cached;
}

async function buildStripeMock(binDir: string, log: Log): Promise<void> {
  const go = which('go') ?? (isExecutable('/usr/local/go/bin/go') ? '/usr/local/go/bin/go' : undefined);
  if (!go) {
    throw new Error(
      `stripe-mock was not found (STRIPE_MOCK_PATH, PATH, ${binDir}) and Go is not installed to build it with ` +
        `\`GOBIN=${binDir} go install ${STRIPE_MOCK_MODULE}@latest\`; install Go (https://go.dev/dl) or set STRIPE_MOCK_PATH`,
    );
  }
  const version = (await runCommand(go, ['version'])).trim();
  fs.mkdirSync(binDir, { recursive: true });
  const failures: string[] = [];
  for (const module of [`${STRIPE_MOCK_MODULE}@latest`, `${STRIPE_MOCK_MODULE}@${STRIPE_MOCK_PINNED_VERSION}`]) {
    log(`building stripe-mock (first run only)… go install ${module} with ${version}`);
    // Build into a private folder and rename into place, so two test runs building at once never
    // leave a half-written binary in the cache.
    const staging = fs.mkdtempSync(path.join(binDir, '.build-'));
    const started = Date.now();
    try {
      const build = spawnChild({
        name: 'go install',
        command: go,
        args: ['install', module],
        env: { ...process.env, GOBIN: staging },
        onLine: (line) => log(`go: ${line.replace(/^go: /, '')}`),
        deathSignal: 'SIGTERM',
        stopSteps: [['SIGTERM', 5_000]],
      });
      const exit = await build.exited;
      const built = path.join(staging, 'stripe-mock');
      if (exit.code === 0 && isExecutable(built)) {
        fs.renameSync(built, path.join(binDir, 'stripe-mock'));
        log(`built stripe-mock in ${seconds(started)}: ${path.join(binDir, 'stripe-mock')}`);
        return;
      }
      failures.push(`\`GOBIN=${binDir} go install ${module}\` ${describeExit(exit)}\n${build.output()}`);
    } finally {
      fs.rmSync(staging, { recursive: true, force: true });
    }
  }
  throw new Error(`building stripe-mock failed:\n${failures.join('\n')}`);
}

/**
 * Starts stripe-mock on free loopback ports and resolves once it answers HTTP. Both listeners get a port
 * of their own: left alone, stripe-mock also opens HTTPS on the fixed port 12112, so two runs would collide.
 */
export async function startStripeMock(log: Log): Promise<StripeMock> {
  const binary = await findOrBuildStripeMock(log);
  let lastError: Error | undefined;
  // A free port can be taken between freePort() and the bind; a fresh pair usually fixes that.
  for (let attempt = 1; attempt <= 3; attempt++) {
    const [httpPort, httpsPort] = await twoFreePorts();
    const child = spawnChild({
      name: 'stripe-mock',
      command: binary,
      args: ['-http-addr', `127.0.0.1:${httpPort}`, '-https-addr', `127.0.0.1:${httpsPort}`],
      onLine: (line) => log(`stripe-mock: ${line}`),
      deathSignal: 'SIGTERM',
      stopSteps: [['SIGTERM', 5_000]],
    });
    const url = `http://127.0.0.1:${httpPort}`;
    try {
      await waitUntilAnswering(url, child, 15_000);
      return { url, stop: () => child.stop() };
    } catch (err) {
      lastError = err as Error;
      await child.stop();
    }
  }
  throw lastError ?? new Error('stripe-mock did not start');
}

async function twoFreePorts(): Promise<[number, number]> {
  const first = await freePort();
  let second = await freePort();
  while (second === first) second = await freePort();
  return [first, second];
}

/** Any HTTP answer counts (stripe-mock says 401 to a request without a key): the listener is up. */
async function waitUntilAnswering(url: string, child: ChildHandle, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const exit = child.exitInfo();
    if (exit) throw new Error(`stripe-mock ${describeExit(exit)} before answering at ${url}\n${child.output()}`);
    try {
      await fetch(url, { signal: AbortSignal.timeout(1_000) });
      return;
    } catch {
      if (Date.now() > deadline) {
        throw new Error(`stripe-mock did not answer at ${url} within ${timeoutMs} ms\n${child.output()}`);
      }
      await sleep(100);
    }
  }
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
