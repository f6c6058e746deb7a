import fs from 'node:fs';
import path from 'node:path';
import { Connection } from '@temporalio/client';
import { encodeSearchAttributeIndexedValueType } from '@temporalio/common/lib/search-attributes';
import { findTemporalCli, serverVersionOf } from './temporal-cli';
import { describeExit, seconds, sleep, spawnChild, throwIfAborted, type ChildHandle, type Log } from './proc';
import { freePort } from './ports';

export interface StartTemporalOptions {
  /** SQLite file for persistence; without it the server keeps everything in memory. */
  dbFile?: string;
  /** gRPC port; defaults to a free one. */
  port?: number;
  /** Web UI port; defaults to a free one. */
  uiPort?: number;
  namespace?: string;
  log: Log;
  /** Server output goes here; without it the last lines are kept in memory for error messages. */
  logFile?: string;
  signal?: AbortSignal;
}

export interface TemporalServer {
  /** host:port of the frontend gRPC service */
  address: string;
  uiUrl: string;
  namespace: string;
  /** SIGTERM, then SIGKILL if it has not exited after a while. */
  stop(): Promise<void>;
}

/** The purchase saga's search attributes; the workflow code owns their names, the server must know them. */
export const SEARCH_ATTRIBUTES = {
  PurchaseStatus: 'KEYWORD',
  Sku: 'KEYWORD',
  BuyerId: 'KEYWORD',
  HoldExpiresAt: 'DATETIME',
} as const;

const CLI_TYPE_NAMES = { KEYWORD: 'Keyword', DATETIME: 'Datetime' } as const;
const READY_TIMEOUT_MS = 60_000;
const PORT_ATTEMPTS = 3;

/**
 * Starts `temporal server start-dev` on 127.0.0.1 with the purchase search attributes registered,
 * and resolves once the namespace answers and the attributes are visible.
 */
export async function startTemporal(opts: StartTemporalOptions): Promise<TemporalServer> {
  const cli = await findTemporalCli(opts.log, { signal: opts.signal });
  const version = await serverVersionOf(cli);
  const namespace = opts.namespace ?? 'default';
  if (opts.dbFile) fs.mkdirSync(path.dirname(path.resolve(opts.dbFile)), { recursive: true });

  for (let attempt = 1; ; attempt++) {
    throwIfAborted(opts.signal);
    const port = opts.port ?? (await freePort());
    const uiPort = opts.uiPort ?? (await freePort());
    const address = `127.0.0.1:${port}`;
    const started = Date.now();
    const server = spawnChild({
      name: 'temporal',
      command: cli,
      args: devServerArgs({ port, uiPort, namespace, dbFile: opts.dbFile, version }),
      logFile: opts.logFile,
      deathSignal: 'SIGTERM',
      stopSteps: [['SIGTERM', 15_000]],
    });
    try {
      await waitForTemporal({ address, namespace, timeoutMs: READY_TIMEOUT_MS, server, signal: opts.signal });
    } catch (err) {
      await server.stop().catch(() => {});
      const output = server.output();
      // Another process can take a port between freePort() and the bind: try fresh ones.
      if (
        (opts.port === undefined || opts.uiPort === undefined) &&
        attempt < PORT_ATTEMPTS &&
        /address already in use/i.test(output)
      ) {
        opts.log(`a port was taken, retrying on others`);
        continue;
      }
      const where = opts.logFile ? ` (full log: ${opts.logFile})` : '';
      throw new Error(`${(err as Error).message}${where}${output ? `\n${output}` : ''}`, { cause: err });
    }
    const uiUrl = `http://127.0.0.1:${uiPort}`;
    opts.log(
      `ready at ${address} (namespace ${namespace}, ${opts.dbFile ? `data ${opts.dbFile}` : 'in memory'}) ` +
        `in ${seconds(started)}; Web UI ${uiUrl}`,
    );
    return { address, uiUrl, namespace, stop: () => server.stop() };
  }
}

/** The dev server's flags, for the Temporal Server version the CLI runs (the pinned 1.32, or 1.29 when built with Go). */
export function devServerArgs(o: {
  port: number;
  uiPort: number;
  namespace: string;
  dbFile?: string;
  version: [number, number, number];
}): string[] {
  const args = ['server', 'start-dev', '--ip', '127.0.0.1', '--port', String(o.port), '--ui-port', String(o.uiPort)];
  args.push('--namespace', o.namespace, '--log-level', 'warn', '--color', 'never');
  for (const [name, type] of Object.entries(SEARCH_ATTRIBUTES)) {
    args.push('--search-attribute', `${name}=${CLI_TYPE_NAMES[type]}`);
  }
  const [major, minor] = o.version;
  const atLeast = (m: number): boolean => major > 1 || minor >= m;
  const dynamic: Record<string, string> = {
    // Workflow updates and update-with-start (the purchase's first answer) need it; the SDK's test server sets it too.
    'frontend.enableUpdateWorkflowExecution': 'true',
    // The dev server re-reads search attributes from its database on every start unless told not to;
    // they only change when the launcher registers them, before any start.
    'system.forceSearchAttributesCacheRefreshOnRead': 'false',
    // One partition per task queue: a single server process gains nothing from more, and the Stripe
    // queue's rate limit (the budget) is then enforced by one limiter, not split four ways.
    'matching.numTaskqueueReadPartitions': '1',
    'matching.numTaskqueueWritePartitions': '1',
  };
  // Before 1.30 update-with-start was behind a flag; from 1.30 the key is gone (always on).
  if (!atLeast(30)) dynamic['frontend.enableExecuteMultiOperation'] = 'true';
  // Priorities (settlement steps ahead of new purchases', workflows/proxies.ts) are served by the new
  // matcher, on by default from 1.31.
  if (!atLeast(31)) dynamic['matching.useNewMatcher'] = 'true';
  for (const [key, value] of Object.entries(dynamic)) args.push('--dynamic-config-value', `${key}=${value}`);
  if (o.dbFile) {
    // SQLite persistence is several times slower without WAL; NORMAL still survives a process crash.
    args.push('--db-filename', path.resolve(o.dbFile));
    args.push('--sqlite-pragma', 'journal_mode=WAL', '--sqlite-pragma', 'synchronous=NORMAL');
  }
  return args;
}

/**
 * Polls until the frontend answers, the namespace describes and every purchase search attribute is
 * registered with its type. Also used to check an external server given by TEMPORAL_ADDRESS.
 */
export async function waitForTemporal(opts: {
  address: string;
  namespace: string;
  timeoutMs: number;
  /** A local server: stop waiting as soon as it exits. */
  server?: ChildHandle;
  signal?: AbortSignal;
}): Promise<void> {
  const deadline = Date.now() + opts.timeoutMs;
  let lastProblem: string;
  let connection: Connection | undefined;
  try {
    for (;;) {
      throwIfAborted(opts.signal);
      const exit = opts.server?.exitInfo();
      if (exit) throw new Error(`the Temporal server ${describeExit(exit)} before it was ready`);
      try {
        connection ??= await Connection.connect({ address: opts.address, connectTimeout: 2_000 });
        await connection.workflowService.describeNamespace({ namespace: opts.namespace });
        const { customAttributes } = await connection.operatorService.listSearchAttributes({
          namespace: opts.namespace,
        });
        const missing = Object.entries(SEARCH_ATTRIBUTES).filter(
          ([name, type]) => customAttributes?.[name] !== encodeSearchAttributeIndexedValueType(type),
        );
        if (missing.length === 0) return;
        lastProblem = `search attributes not registered (or of another type): ${missing
          .map(([name, type]) => `${name}=${CLI_TYPE_NAMES[type]}`)
          .join(', ')}`;
      } catch (err) {
        lastProblem = (err as Error).message;
      }
      if (Date.now() > deadline) {
        throw new Error(
          `Temporal at ${opts.address} (namespace ${opts.namespace}) not ready within ${opts.timeoutMs / 1000}s: ${lastProblem}`,
        );
      }
      await sleep(200);
    }
  } finally {
    await connection?.close().catch(() => {});
  }
}
