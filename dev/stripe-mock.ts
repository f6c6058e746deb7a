import { describeExit, sleep, spawnChild, type ChildHandle, type Log } from './proc';
import { freePort } from './ports';
import { findOrBuildGoTool } from './tools';

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

/** Finds stripe-mock (STRIPE_MOCK_PATH, PATH, the tool cache), or builds it with `go install` (seconds, once). */
export function findOrBuildStripeMock(log: Log): Promise<string> {
  return findOrBuildGoTool(
    {
      binary: 'stripe-mock',
      title: 'stripe-mock',
      envVar: 'STRIPE_MOCK_PATH',
      modules: [`${STRIPE_MOCK_MODULE}@latest`, `${STRIPE_MOCK_MODULE}@${STRIPE_MOCK_PINNED_VERSION}`],
      expected: 'first run only, under a minute',
    },
    log,
  );
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
