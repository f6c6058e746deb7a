import fs from 'node:fs';
import path from 'node:path';
import { Connection } from '@temporalio/client';
import { encodeSearchAttributeIndexedValueType } from '@temporalio/common/lib/search-attributes';
import { msToTs } from '@temporalio/common/lib/time';
import pg from 'pg';
import { describeExit, runCommand, seconds, sleep, spawnChild, type ChildHandle, type Log } from './proc';
import { freePort } from './ports';
import { SEARCH_ATTRIBUTES, waitForTemporal } from './temporal';
import { isExecutable, toolCacheDir, which } from './tools';

// The production shape's Temporal: the real server (frontend, history, matching and worker services
// in one process) on Postgres, with persistence and visibility in databases of their own, a handful
// of history shards and the repository's dynamic config (deploy/temporal/dynamicconfig.yaml, the
// file the Compose stack mounts too). Used by the cluster rehearsal (`npm run drill -- --cluster`).

/** The server version the rehearsal runs and docker-compose.yml pins (test/deploy checks they agree). */
export const TEMPORAL_SERVER_VERSION = '1.30.8';
const SERVER_MODULE = `go.temporal.io/server/cmd/server@v${TEMPORAL_SERVER_VERSION}`;
const SQL_TOOL_MODULE = `go.temporal.io/server/cmd/tools/sql@v${TEMPORAL_SERVER_VERSION}`;
export const DYNAMIC_CONFIG_FILE = path.resolve(__dirname, '..', 'deploy', 'temporal', 'dynamicconfig.yaml');
const HISTORY_SHARDS = 4;
const READY_TIMEOUT_MS = 60_000;

export interface TemporalServerTools {
  server: string;
  sqlTool: string;
  /** The module's `schema/postgresql/v12` folder: `temporal/versioned` and `visibility/versioned`. */
  schemaDir: string;
}

/**
 * The server, its SQL tool and its schemas, from the tool cache (`temporal-server-<version>/`), built
 * there once with `go install` (about 4 minutes from a cold Go cache; the only part of the project
 * that needs Go, and only for the rehearsal). `TEMPORAL_SERVER_DIR` names a folder of one's own.
 */
export async function findTemporalServer(log: Log, signal?: AbortSignal): Promise<TemporalServerTools> {
  const dir =
    process.env.TEMPORAL_SERVER_DIR || path.join(toolCacheDir(), `temporal-server-${TEMPORAL_SERVER_VERSION}`);
  const tools = {
    server: path.join(dir, 'server'),
    sqlTool: path.join(dir, 'sql'),
    schemaDir: path.join(dir, 'schema', 'postgresql', 'v12'),
  };
  if (isExecutable(tools.server) && isExecutable(tools.sqlTool) && fs.existsSync(tools.schemaDir)) return tools;
  if (process.env.TEMPORAL_SERVER_DIR) {
    throw new Error(`TEMPORAL_SERVER_DIR=${dir} lacks server, sql or schema/postgresql/v12`);
  }
  // Callers in one process (two tests of one file, say) share one build: each its own would race
  // over the one staging folder of this process.
  let build = building.get(dir);
  if (!build) {
    build = buildServer(dir, log, signal).finally(() => building.delete(dir));
    building.set(dir, build);
  }
  await build;
  return tools;
}

/** The build under way in this process, per target folder. */
const building = new Map<string, Promise<void>>();

async function buildServer(dir: string, log: Log, signal?: AbortSignal): Promise<void> {
  const go = which('go') ?? (isExecutable('/usr/local/go/bin/go') ? '/usr/local/go/bin/go' : undefined);
  if (!go) {
    throw new Error(
      `the Temporal server ${TEMPORAL_SERVER_VERSION} is not in ${dir} and Go is not installed to build it ` +
        `(go install ${SERVER_MODULE} ${SQL_TOOL_MODULE}); install Go (https://go.dev/dl) or set TEMPORAL_SERVER_DIR`,
    );
  }
  const staging = `${dir}.build-${process.pid}`;
  fs.rmSync(staging, { recursive: true, force: true });
  fs.mkdirSync(staging, { recursive: true });
  const started = Date.now();
  log(`building the Temporal server ${TEMPORAL_SERVER_VERSION} and its SQL tool (once, about 4 minutes)…`);
  const build = spawnChild({
    name: 'go install',
    command: go,
    args: ['install', SERVER_MODULE, SQL_TOOL_MODULE],
    env: { ...process.env, GOBIN: staging, GOFLAGS: '-mod=mod' },
    deathSignal: 'SIGTERM',
    stopSteps: [['SIGTERM', 5_000]],
  });
  const heartbeat = setInterval(() => log(`still building the Temporal server (${seconds(started)})…`), 30_000);
  const onAbort = (): void => void build.stop().catch(() => {});
  signal?.addEventListener('abort', onAbort, { once: true });
  try {
    const exit = await build.exited;
    if (signal?.aborted) throw new Error('aborted while building the Temporal server');
    if (exit.code !== 0) throw new Error(`go install ${SERVER_MODULE} ${describeExit(exit)}\n${build.output()}`);
    // The schemas are in the module's source, which `go install` left in the module cache.
    const modCache = (await runCommand(go, ['env', 'GOMODCACHE'])).trim();
    const schema = path.join(modCache, `go.temporal.io/server@v${TEMPORAL_SERVER_VERSION}`, 'schema', 'postgresql');
    fs.cpSync(schema, path.join(staging, 'schema', 'postgresql'), { recursive: true });
    fs.rmSync(dir, { recursive: true, force: true });
    fs.renameSync(staging, dir);
    log(`built the Temporal server in ${seconds(started)}: ${dir}`);
  } finally {
    clearInterval(heartbeat);
    signal?.removeEventListener('abort', onAbort);
    fs.rmSync(staging, { recursive: true, force: true });
  }
}

export interface StartTemporalServerOptions {
  /** The Postgres the server keeps its databases in (`temporal`, `temporal_visibility`): host, port, superuser. */
  postgres: { host: string; port: number; user: string };
  /** Holds the rendered config and the server's log. */
  dataDir: string;
  namespace: string;
  /** The frontend's gRPC port; a free one by default (kept across restarts). */
  port?: number;
  log: Log;
  signal?: AbortSignal;
}

export interface RealTemporalServer {
  address: string;
  namespace: string;
  /** The server process (for a rehearsal's faults: kill, restart). */
  pid(): number;
  /** SIGTERM (the server drains), then SIGKILL after a while. */
  stop(): Promise<void>;
  /** Stops and starts it again on the same ports and databases; resolves once it answers again. */
  restart(): Promise<void>;
}

/**
 * Sets up Temporal's two databases (create, base schema, every versioned update: idempotent), starts
 * the server, registers the namespace and the purchase search attributes the way the Compose stack's
 * one-shot jobs do, and resolves once the namespace describes with the attributes in place.
 */
export async function startTemporalServer(opts: StartTemporalServerOptions): Promise<RealTemporalServer> {
  const tools = await findTemporalServer(opts.log, opts.signal);
  fs.mkdirSync(opts.dataDir, { recursive: true });
  await setUpSchemas(tools, opts.postgres, opts.log);
  // freePort() gives ports below 32768: the membership ones are kept in a Postgres smallint column.
  const ports = {
    frontend: opts.port ?? (await freePort()),
    frontendHttp: await freePort(),
    frontendMembership: await freePort(),
    history: await freePort(),
    historyMembership: await freePort(),
    matching: await freePort(),
    matchingMembership: await freePort(),
    worker: await freePort(),
    workerMembership: await freePort(),
  };
  const configFile = path.join(opts.dataDir, 'temporal-server.yaml');
  fs.writeFileSync(configFile, serverConfig(opts.postgres, ports));
  const address = `127.0.0.1:${ports.frontend}`;
  const logFile = path.join(opts.dataDir, 'temporal-server.log');
  let child: ChildHandle | undefined;

  const start = async (): Promise<void> => {
    const started = Date.now();
    child = spawnChild({
      name: 'temporal-server',
      command: tools.server,
      args: ['--config-file', configFile, '--allow-no-auth', 'start'],
      logFile,
      deathSignal: 'SIGTERM',
      stopSteps: [['SIGTERM', 20_000]],
    });
    await waitForFrontend(address, child, opts.signal);
    await registerNamespace(address, opts.namespace);
    await waitForTemporal({ address, namespace: opts.namespace, timeoutMs: READY_TIMEOUT_MS, server: child });
    opts.log(
      `Temporal server ${TEMPORAL_SERVER_VERSION} ready at ${address} (Postgres, ${HISTORY_SHARDS} shards) in ${seconds(started)}`,
    );
  };
  await start();
  return {
    address,
    namespace: opts.namespace,
    pid: () => child?.pid ?? -1,
    stop: async () => {
      await child?.stop();
    },
    restart: async () => {
      await child?.stop();
      await start();
    },
  };
}

async function setUpSchemas(tools: TemporalServerTools, db: StartTemporalServerOptions['postgres'], log: Log) {
  const started = Date.now();
  const sql = (database: string, ...args: string[]) =>
    runCommand(tools.sqlTool, [
      '--plugin',
      'postgres12',
      '--ep',
      db.host,
      '-p',
      String(db.port),
      '-u',
      db.user,
      '--db',
      database,
      ...args,
    ]);
  for (const [database, versioned] of [
    ['temporal', 'temporal'],
    ['temporal_visibility', 'visibility'],
  ] as const) {
    if (!(await databaseExists(db, database))) {
      await sql(database, 'create');
      await sql(database, 'setup-schema', '-v', '0.0');
    }
    await sql(database, 'update-schema', '-d', path.join(tools.schemaDir, versioned, 'versioned'));
  }
  log(`Temporal's schemas (temporal, temporal_visibility) are up to date (${seconds(started)})`);
}

async function databaseExists(db: StartTemporalServerOptions['postgres'], name: string): Promise<boolean> {
  const client = new pg.Client({ host: db.host, port: db.port, user: db.user, database: 'postgres' });
  await client.connect();
  try {
    return ((await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [name])).rowCount ?? 0) > 0;
  } finally {
    await client.end();
  }
}

function serverConfig(db: StartTemporalServerOptions['postgres'], p: Record<string, number>): string {
  const store = (database: string, maxConns: number) => `
      sql:
        pluginName: postgres12
        databaseName: ${database}
        connectAddr: "${db.host}:${db.port}"
        connectProtocol: tcp
        user: ${db.user}
        password: ""
        maxConns: ${maxConns}
        maxIdleConns: ${maxConns}
        maxConnLifetime: 1h`;
  const service = (grpc: number, membership: number, extra = '') => `
    rpc:
      grpcPort: ${grpc}
      membershipPort: ${membership}
      bindOnLocalHost: true${extra}`;
  return `# Rendered by dev/temporal-server.ts for the cluster rehearsal.
log:
  stdout: true
  level: warn
persistence:
  defaultStore: default
  visibilityStore: visibility
  numHistoryShards: ${HISTORY_SHARDS}
  datastores:
    default:${store('temporal', 20)}
    visibility:${store('temporal_visibility', 10)}
global:
  membership:
    maxJoinDuration: 30s
    broadcastAddress: 127.0.0.1
services:
  frontend:${service(p.frontend, p.frontendMembership, `\n      httpPort: ${p.frontendHttp}`)}
  history:${service(p.history, p.historyMembership)}
  matching:${service(p.matching, p.matchingMembership)}
  worker:${service(p.worker, p.workerMembership)}
clusterMetadata:
  enableGlobalNamespace: false
  failoverVersionIncrement: 10
  masterClusterName: active
  currentClusterName: active
  clusterInformation:
    active:
      enabled: true
      initialFailoverVersion: 1
      rpcName: frontend
      rpcAddress: "127.0.0.1:${p.frontend}"
      httpAddress: "127.0.0.1:${p.frontendHttp}"
dcRedirectionPolicy:
  policy: noop
dynamicConfigClient:
  filepath: ${JSON.stringify(DYNAMIC_CONFIG_FILE)}
  pollInterval: 10s
`;
}

/** Until the frontend answers a health check (the server exiting first is an error with its log). */
async function waitForFrontend(address: string, server: ChildHandle, signal?: AbortSignal): Promise<void> {
  const deadline = Date.now() + READY_TIMEOUT_MS;
  let last: string;
  for (;;) {
    if (signal?.aborted) throw new Error('aborted while starting the Temporal server');
    const exit = server.exitInfo();
    if (exit) throw new Error(`the Temporal server ${describeExit(exit)} before it answered\n${server.output()}`);
    try {
      const connection = await Connection.connect({ address, connectTimeout: 1_000 });
      try {
        await connection.workflowService.getSystemInfo({});
        return;
      } finally {
        await connection.close();
      }
    } catch (err) {
      last = (err as Error).message;
    }
    if (Date.now() > deadline) throw new Error(`the Temporal server at ${address} did not answer: ${last}`);
    await sleep(250);
  }
}

/**
 * The namespace (7 days' retention) and the saga's search attributes, as the Compose stack's one-shot
 * jobs make them; each step tolerates "already there", so a restart repeats them harmlessly. A namespace
 * looked up before it exists is cached as missing for about a second: waitForTemporal polls past that.
 */
async function registerNamespace(address: string, namespace: string): Promise<void> {
  const connection = await Connection.connect({ address });
  try {
    try {
      await connection.workflowService.registerNamespace({
        namespace,
        workflowExecutionRetentionPeriod: msToTs('7 days'),
      });
    } catch (err) {
      if (!/already exists|AlreadyExists/i.test((err as Error).message)) throw err;
    }
    for (let attempt = 0; ; attempt++) {
      try {
        await connection.operatorService.addSearchAttributes({
          namespace,
          searchAttributes: Object.fromEntries(
            Object.entries(SEARCH_ATTRIBUTES).map(([name, type]) => [
              name,
              encodeSearchAttributeIndexedValueType(type)!,
            ]),
          ),
        });
        return;
      } catch (err) {
        const message = (err as Error).message;
        if (/already exists/i.test(message)) return;
        // The namespace was just made: its cache entry may still say "not found" for a second.
        if (attempt < 20 && /not found|NotFound/i.test(message)) {
          await sleep(250);
          continue;
        }
        throw err;
      }
    }
  } finally {
    await connection.close();
  }
}
