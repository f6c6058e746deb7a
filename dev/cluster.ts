// The production shape on one machine, for `npm run drill -- --cluster`: Postgres; the real Temporal
// server on it (dev/temporal-server.ts: its own databases, several history shards, the repository's
// dynamic config); the payments emulator; several workers and several API processes, the APIs behind
// one address (HAProxy, dev/balancer.ts) when the distro has it. Each process can be killed on
// purpose (a rehearsal's fault) and Temporal restarted; the rest carries on.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { setCurrentVersion } from '../client/deployments';
import { migrate } from '../store/migrate';
import { tracingWanted } from '../config/tracing';
import { bundleWorkflows, QUIET_BUNDLE_LOGGER } from '../worker/create-worker';
import { findHaproxy, startBalancer, type Balancer } from './balancer';
import {
  allReady,
  serviceEnv,
  startApiProcess,
  startEmulatorProcess,
  startWorkerProcess,
  systemSecrets,
  type LocalSystem,
  type LocalSystemOptions,
  type NodePart,
} from './local-system';
import { startPostgres, type PostgresServer } from './postgres';
import { type ChildHandle } from './proc';
import { freePort } from './ports';
import { startTemporalServer, TEMPORAL_SERVER_VERSION, type RealTemporalServer } from './temporal-server';

export const PROCESS_KINDS = ['api', 'worker', 'temporal', 'postgres', 'emulator', 'balancer'] as const;
export type ProcessKind = (typeof PROCESS_KINDS)[number];

export interface ClusterProcess {
  name: string;
  kind: ProcessKind;
  pid: number;
}

export interface ClusterOptions extends LocalSystemOptions {
  apis?: number;
  workers?: number;
  /** Put HAProxy in front of the APIs when it is installed (default); false: callers spread over apiUrls. */
  balancer?: boolean;
  /**
   * With the balancer: the first `crowdApis` APIs serve the waiting crowd's paths (api/lanes.ts) and
   * the others everything else, each lane falling back on every API (dev/balancer.ts). 0 (default):
   * every API serves every request.
   */
  crowdApis?: number;
  /**
   * Worker Versioning on: the workers are version `CLUSTER_FIRST_BUILD` of this Worker Deployment, set
   * current once they poll, and `deploy()` rolls out the next version.
   */
  deploymentName?: string;
}

/** The build id of the cluster's first workers under Worker Versioning; a deploy's is `drill-2`, and so on. */
export const CLUSTER_FIRST_BUILD = 'drill-1';

/** What a rolling deploy did: the version now current, the workers it started and the old ones still draining. */
export interface Deploy {
  buildId: string;
  /** The version that was current before. */
  from: string;
  started: string[];
  draining: string[];
}

export interface Cluster extends LocalSystem {
  /** Every API process, in order (`api-1` first). `base` is the balancer's address, or the first API's without one. */
  apiUrls: string[];
  /** Set when a balancer fronts the APIs (`HAProxy 2.6.12 on 127.0.0.1:PORT`). */
  balancer?: string;
  /** The balancer's output, a line per answer with its time (dev/balancer.ts REQUEST_LOG_FORMAT). */
  balancerLog?: string;
  describe: string;
  /** The processes running now (a killed one is gone from the list; a restarted server has its new pid). */
  processes(): ClusterProcess[];
  /** `kill -9` of one API or worker (`api-1`, `worker-2`); resolves once it is gone. */
  kill(name: string): Promise<void>;
  /** Stops the Temporal server and starts it again on the same ports and databases. */
  restartTemporal(): Promise<void>;
  /**
   * A rolling deploy (with `deploymentName`): as many workers as run now start as the next version,
   * which is set current once they poll; the old workers keep serving the sagas pinned to theirs.
   */
  deploy(): Promise<Deploy>;
  /** Stops workers (SIGTERM: in-flight steps get the grace time), as a deploy retires a drained version. */
  retire(names: string[]): Promise<void>;
  /** The Temporal client the cluster's own steps use (set-current-version). */
  temporalClient(): Client;
}

/** Each API and worker has its pool; Temporal its 30 connections; room to spare. */
const MAX_CONNECTIONS = '400';

export async function startCluster(opts: ClusterOptions): Promise<Cluster> {
  const apis = opts.apis ?? 2;
  const workers = opts.workers ?? 2;
  if (opts.crowdApis && opts.crowdApis >= apis)
    throw new Error(`crowdApis ${opts.crowdApis} would leave none of the ${apis} APIs to the buyers`);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), `${opts.name}-cluster-`));
  const log = opts.log ?? (() => {});
  const children = new Map<string, { kind: ProcessKind; child: ChildHandle }>();
  const killed = new Set<string>();
  let postgres: PostgresServer | undefined;
  let temporal: RealTemporalServer | undefined;
  let balancer: Balancer | undefined;
  let connection: Connection | undefined;
  let stopping = false;
  const stop = async (): Promise<void> => {
    stopping = true;
    // Traffic first (APIs, then the balancer), then the workers and the emulator, then the servers.
    const order: ProcessKind[] = ['api', 'balancer', 'worker', 'emulator'];
    for (const kind of order) {
      for (const { child } of [...children.values()].filter((c) => c.kind === kind)) await child.stop().catch(() => {});
    }
    children.clear();
    await connection?.close().catch(() => {});
    await temporal?.stop().catch(() => {});
    await postgres?.stop().catch(() => {});
    fs.rmSync(dir, { recursive: true, force: true });
  };
  try {
    opts.say?.(`starting Postgres and the Temporal server ${TEMPORAL_SERVER_VERSION} on it...`);
    postgres = await startPostgres({
      dataDir: path.join(dir, 'postgres'),
      log: (line) => log(`[postgres] ${line}`),
      logFile: path.join(dir, 'postgres.log'),
      // pg_stat_statements: the drill splits the drop's WAL between the app's and Temporal's databases (dev/db-footprint.ts).
      settings: { max_connections: MAX_CONNECTIONS, shared_preload_libraries: 'pg_stat_statements' },
      signal: opts.signal,
    });
    const databaseUrl = postgres.url;
    const db = new URL(databaseUrl);
    [temporal] = await Promise.all([
      startTemporalServer({
        postgres: { host: db.hostname, port: Number(db.port), user: decodeURIComponent(db.username) },
        dataDir: path.join(dir, 'temporal'),
        namespace: 'default',
        log: (line) => log(`[temporal] ${line}`),
        signal: opts.signal,
      }),
      migrate(databaseUrl, (line) => log(`[postgres] ${line}`)),
    ]);

    const apiPorts = await Promise.all(Array.from({ length: apis }, () => freePort()));
    const apiUrls = apiPorts.map((p) => `http://127.0.0.1:${p}`);
    const apiNames = apiPorts.map((_, i) => `api-${i + 1}`);
    const haproxy = opts.balancer === false ? undefined : findHaproxy();
    if (haproxy) {
      balancer = await startBalancer({
        haproxy,
        dir,
        servers: apiPorts.map((port, i) => ({
          name: apiNames[i],
          port,
          ...(opts.crowdApis ? { lane: i < opts.crowdApis ? ('crowd' as const) : ('buyers' as const) } : {}),
        })),
        log,
      });
      children.set('balancer', { kind: 'balancer', child: balancer.child });
    }
    const base = balancer?.url ?? apiUrls[0];
    // HAProxy connects from 127.0.0.1 and appends the client's address to X-Forwarded-For; without
    // it the buyers reach the APIs themselves, and the header is believed from no one.
    const trusted = balancer ? '127.0.0.1' : '';
    const emulatorPort = await freePort();
    const emulatorUrl = `http://127.0.0.1:${emulatorPort}`;
    const secrets = systemSecrets(opts.name);
    // The deployment's default queue, on a server of its own: the dynamic config's one-partition rule
    // for its Stripe queue (deploy/temporal/dynamicconfig.yaml) names `purchases-stripe`.
    const taskQueue = 'purchases';
    const temporalAddress = temporal.address;
    const shared = serviceEnv({
      databaseUrl,
      temporalAddress,
      temporalNamespace: temporal.namespace,
      taskQueue,
      emulatorUrl,
      publicUrl: base,
      secrets,
    });
    Object.assign(shared, opts.env);
    opts.say?.(
      `starting the payments emulator, ${workers} workers and ${apis} APIs${balancer ? ` behind ${balancer.describe}` : ' (no balancer installed)'}...`,
    );
    // Each process writes its output to a file of its own, read back as it grows: under a drop the
    // drill, their parent, is busy, and a process whose stdout pipe it read late would stall.
    const logFileOf = (name: string) => path.join(dir, `${name}.log`);
    // The workflows bundled once for every worker (a deploy's too): each would spend seconds of CPU
    // bundling them at start, and a deploy's workers would be late to take the new sagas.
    const bundlePath = path.join(dir, 'workflow-bundle.js');
    const tracing = tracingWanted({ ...process.env, ...shared });
    fs.writeFileSync(bundlePath, await bundleWorkflows({ tracing, logger: QUIET_BUNDLE_LOGGER }));
    const versioned = (buildId: string) =>
      opts.deploymentName ? { WORKER_DEPLOYMENT_NAME: opts.deploymentName, WORKER_BUILD_ID: buildId } : {};
    const startWorker = (n: number, buildId: string): [string, ProcessKind, NodePart] => {
      const name = `worker-${n}`;
      // A free port each for /metrics: several workers share the host.
      const env = { ...shared, WORKER_METRICS_PORT: '0', WORKFLOW_BUNDLE_PATH: bundlePath, ...versioned(buildId) };
      return [name, 'worker', startWorkerProcess(name, env, opts.log, logFileOf(name))];
    };
    const parts: Array<[string, ProcessKind, NodePart]> = [
      [
        'emulator',
        'emulator',
        startEmulatorProcess({
          port: emulatorPort,
          webhookUrl: `${base}/v1/webhooks/stripe`,
          secrets,
          log: opts.log,
          logFile: logFileOf('emulator'),
        }),
      ],
      ...Array.from({ length: workers }, (_, i) => startWorker(i + 1, CLUSTER_FIRST_BUILD)),
      ...apiPorts.map((port, i): [string, ProcessKind, NodePart] => [
        apiNames[i],
        'api',
        startApiProcess(
          apiNames[i],
          port,
          { ...shared, TRUSTED_PROXIES: trusted, ...opts.apiEnv },
          opts.log,
          logFileOf(apiNames[i]),
        ),
      ]),
    ];
    for (const [name, kind, part] of parts) children.set(name, { kind, child: part.child });
    await allReady(
      parts.map(([, , part]) => part),
      opts.signal,
    );
    const watchExit = (name: string, child: ChildHandle) =>
      void child.exited.then((info) => {
        if (!stopping && !killed.has(name)) opts.onUnexpectedExit?.(name, info, child.output());
      });
    for (const [name, { child }] of children) watchExit(name, child);
    connection = await Connection.connect({ address: temporal.address });
    const client = new Client({ connection, namespace: temporal.namespace });
    let build = 1;
    let workerCount = workers;
    if (opts.deploymentName) {
      await setCurrentVersion(client, { deploymentName: opts.deploymentName, buildId: CLUSTER_FIRST_BUILD });
    }
    let webhookTarget = 0;
    const temporalServer = temporal;
    const pg = postgres;
    return {
      base,
      apiUrls,
      balancer: balancer?.describe,
      ...(balancer ? { balancerLog: balancer.logFile } : {}),
      describe: `the cluster (Temporal server ${TEMPORAL_SERVER_VERSION} on Postgres, ${apis} APIs ${
        balancer ? `behind ${balancer.describe}` : 'without a balancer: the buyers are spread over them'
      }${balancer && opts.crowdApis ? ` (${opts.crowdApis} for the waiting crowd, ${apis - opts.crowdApis} for the buyers)` : ''}, ${workers} workers, the emulator)`,
      adminToken: secrets.admin,
      buyerSecret: secrets.buyer,
      emulatorUrl,
      databaseUrl,
      temporalAddress,
      temporalNamespace: temporal.namespace,
      taskQueue,
      apiPid: children.get(apiNames[0])!.child.pid,
      processes: () => [
        { name: 'postgres', kind: 'postgres' as const, pid: pg.pid },
        { name: 'temporal', kind: 'temporal' as const, pid: temporalServer.pid() },
        ...[...children]
          .filter(([name, { child }]) => !killed.has(name) && !child.exitInfo())
          .map(([name, { kind, child }]) => ({ name, kind, pid: child.pid })),
      ],
      kill: async (name) => {
        const entry = children.get(name);
        if (!entry || (entry.kind !== 'api' && entry.kind !== 'worker'))
          throw new Error(`no API or worker named ${name}`);
        killed.add(name);
        process.kill(entry.child.pid, 'SIGKILL');
        await entry.child.exited;
        // Without a balancer the emulator's webhooks go to one API: point them at one still running.
        const index = apiNames.indexOf(name);
        if (!balancer && index === webhookTarget) {
          webhookTarget = apiNames.findIndex((n) => !killed.has(n));
          if (webhookTarget >= 0) await pointWebhooks(emulatorUrl, `${apiUrls[webhookTarget]}/v1/webhooks/stripe`);
        }
      },
      restartTemporal: () => temporalServer.restart(),
      temporalClient: () => client,
      deploy: async () => {
        if (!opts.deploymentName) throw new Error('a deploy needs the cluster started with a deploymentName');
        const running = [...children].filter(([n, c]) => c.kind === 'worker' && !killed.has(n) && !c.child.exitInfo());
        const from = `drill-${build}`;
        const buildId = `drill-${++build}`;
        const fresh = running.map(() => startWorker(++workerCount, buildId));
        for (const [name, kind, part] of fresh) children.set(name, { kind, child: part.child });
        await allReady(
          fresh.map(([, , part]) => part),
          opts.signal,
        );
        for (const [name, , part] of fresh) watchExit(name, part.child);
        await setCurrentVersion(client, { deploymentName: opts.deploymentName, buildId });
        return { buildId, from, started: fresh.map(([name]) => name), draining: running.map(([name]) => name) };
      },
      retire: async (names) => {
        for (const name of names) {
          const entry = children.get(name);
          if (entry?.kind !== 'worker') throw new Error(`no worker named ${name}`);
          killed.add(name);
          await entry.child.stop();
        }
      },
      stop,
    };
  } catch (err) {
    await stop();
    throw err;
  }
}

/**
 * Sends the emulator's webhooks to `url` from now on (its retries too). Tried a few times: one fetch
 * can meet a keep-alive connection the emulator closed a moment before (`fetch failed`), and a
 * webhook left pointing at a killed API loses every payment made after the kill.
 */
async function pointWebhooks(emulatorUrl: string, url: string): Promise<void> {
  let last: unknown;
  for (let attempt = 1; attempt <= 5; attempt++) {
    try {
      const res = await fetch(`${emulatorUrl}/_emulator/webhooks`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ url }),
      });
      if (res.ok) return;
      last = new Error(`the emulator answered ${res.status}: ${await res.text()}`);
    } catch (err) {
      last = err;
    }
    await new Promise((r) => setTimeout(r, 200 * attempt));
  }
  throw new Error(`could not point the emulator's webhooks at ${url}: ${(last as Error).message}`);
}
