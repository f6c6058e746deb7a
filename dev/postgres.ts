import fs from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import {
  describeExit,
  isAlive,
  runCommand,
  seconds,
  sleep,
  spawnChild,
  throwIfAborted,
  type ChildHandle,
  type Log,
  type RunAs,
} from './proc';
import { freePort } from './ports';
import { findPostgresBinaries } from './postgres-binaries';

export interface StartPostgresOptions {
  /**
   * The cluster's folder, without its version: the cluster lives in `<dataDir>-<major>`, created with
   * initdb when it holds none yet.
   */
  dataDir: string;
  /** Defaults to a free port (the one in `portFile`, when it is free). */
  port?: number;
  /**
   * Where the port is remembered across starts (`npm start`): a DATABASE_URL printed once, and put in
   * a shell or a CLI's environment, still holds after a restart. Taken by something else meanwhile,
   * Postgres starts on a free port and says so; that port is remembered instead.
   */
  portFile?: string;
  log: Log;
  /** Server output goes here; without it the last lines are kept in memory for error messages. */
  logFile?: string;
  /** Server settings over the defaults (e.g. `max_connections` for a topology of many processes). */
  settings?: Record<string, string>;
  signal?: AbortSignal;
}

export interface PostgresServer {
  /** `postgres://postgres@127.0.0.1:PORT/flashsale` */
  url: string;
  /** The cluster's folder (`dataDir` with the major version appended). */
  dataDir: string;
  /** The postmaster's process id (its backends are its children). */
  pid: number;
  /** Fast shutdown (rolls back open transactions, then a clean checkpoint), and waits for it. */
  stop(): Promise<void>;
}

export const DATABASE_NAME = 'flashsale';
const SUPERUSER = 'postgres';
const READY_TIMEOUT_MS = 120_000; // a persistent cluster may replay WAL after a crash
const PORT_ATTEMPTS = 3;

/**
 * Starts a Postgres server of its own on 127.0.0.1 with the system's server binaries, creating the
 * cluster and the `flashsale` database when missing. Root cannot run Postgres, so as root the server
 * runs as the unprivileged `postgres` account.
 */
export async function startPostgres(opts: StartPostgresOptions): Promise<PostgresServer> {
  const { binDir, major, source } = await findPostgresBinaries();
  const dataDir = clusterDir(opts.dataDir, major);
  const runAs = process.getuid?.() === 0 ? await ensureServerAccount(opts.log) : undefined;
  if (runAs) {
    grantTraversal(path.dirname(dataDir), runAs, opts.log);
    grantTraversal(binDir, runAs, opts.log);
  }
  opts.log(`Postgres ${major} from ${source}`);
  await initCluster(binDir, major, dataDir, runAs, opts.log);
  await clearStaleLock(dataDir, opts.log);

  const remembered = opts.port === undefined && opts.portFile ? rememberedPort(opts.portFile) : undefined;
  let lastTime: number | undefined;
  for (let attempt = 1; ; attempt++) {
    throwIfAborted(opts.signal);
    const port = opts.port ?? (attempt === 1 && remembered ? remembered : await freePort());
    const started = Date.now();
    const server = spawnChild({
      name: 'postgres',
      command: path.join(binDir, 'postgres'),
      args: serverArgs(dataDir, port, opts.settings),
      logFile: opts.logFile,
      runAs,
      // SIGINT is Postgres's "fast shutdown": the cluster is left clean even if the launcher died.
      deathSignal: 'SIGINT',
      stopSteps: [
        ['SIGINT', 30_000],
        ['SIGQUIT', 5_000],
      ],
    });
    try {
      await waitUntilReady(server, port, opts.signal);
    } catch (err) {
      await server.stop().catch(() => {});
      const output = server.output();
      // Another process can take a port between freePort() and the bind: try a fresh one.
      if (opts.port === undefined && attempt < PORT_ATTEMPTS && /could not bind|already in use/i.test(output)) {
        if (port === remembered) lastTime = port;
        else opts.log(`port ${port} was taken, retrying on another`);
        continue;
      }
      throw withLogHint(err as Error, output, opts.logFile);
    }
    await createDatabase(port);
    if (opts.portFile) fs.writeFileSync(opts.portFile, `${port}\n`);
    if (lastTime) {
      opts.log(
        `port ${lastTime}, where Postgres was last time, is taken: it is on ${port} now (a DATABASE_URL naming ${lastTime} needs the new port)`,
      );
    }
    opts.log(`ready on 127.0.0.1:${port} in ${seconds(started)} (data ${dataDir})`);
    return {
      url: `postgres://${SUPERUSER}@127.0.0.1:${port}/${DATABASE_NAME}`,
      dataDir,
      pid: server.pid,
      stop: () => server.stop(),
    };
  }
}

/** The port a previous start wrote to `file`, if it holds one. */
function rememberedPort(file: string): number | undefined {
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8').trim();
  } catch {
    return undefined;
  }
  const port = Number(text);
  return Number.isInteger(port) && port > 0 && port < 65536 ? port : undefined;
}

function serverArgs(dataDir: string, port: number, overrides: Record<string, string> = {}): string[] {
  // A Unix socket path longer than 107 bytes cannot be bound; clients here use TCP, so skip the socket then.
  const socketDir = Buffer.byteLength(path.join(dataDir, `.s.PGSQL.${port}.lock`)) < 100 ? dataDir : '';
  const settings: Record<string, string> = {
    listen_addresses: '127.0.0.1',
    port: String(port),
    unix_socket_directories: socketDir,
    max_connections: '200',
    shared_buffers: '256MB',
    // Benchmarks measure durable commits: never trade fsync for speed here.
    fsync: 'on',
    synchronous_commit: 'on',
    // A young cluster creates its WAL segments as it goes; zero-filling each new 16 MB file stalls
    // commits for milliseconds until segments start being recycled. Commits stay durable without it.
    wal_init_zero: 'off',
    ...overrides,
  };
  return ['-D', dataDir, ...Object.entries(settings).flatMap(([key, value]) => ['-c', `${key}=${value}`])];
}

/**
 * The unprivileged account that runs Postgres when the launcher is root: `postgres` (Debian's server
 * package makes it), created when missing; where no account can be made (no useradd), `nobody`.
 */
async function ensureServerAccount(log: Log): Promise<RunAs> {
  const lookup = async (name: string): Promise<RunAs> => ({
    uid: Number((await runCommand('id', ['-u', name])).trim()),
    gid: Number((await runCommand('id', ['-g', name])).trim()),
  });
  try {
    return await lookup(SUPERUSER);
  } catch {
    // no such account yet
  }
  try {
    log(`running as root: creating the system user "${SUPERUSER}" to run Postgres`);
    await runCommand('useradd', [
      '--system',
      '--user-group',
      '--no-create-home',
      '--home-dir',
      '/var/lib/postgresql',
      '--shell',
      '/usr/sbin/nologin',
      SUPERUSER,
    ]);
    return await lookup(SUPERUSER);
  } catch (err) {
    log(`could not create "${SUPERUSER}" (${(err as Error).message.split('\n')[0]}): running Postgres as "nobody"`);
    return lookup('nobody');
  }
}

/**
 * The server account must be able to walk down to its data folder. A private ancestor (a 0700 temp
 * folder, /root) gets search permission for others added (`o+x`, no listing), and says so.
 */
function grantTraversal(dir: string, user: RunAs, log: Log): void {
  fs.mkdirSync(dir, { recursive: true });
  const chain: string[] = [];
  for (let d = path.resolve(dir); ; d = path.dirname(d)) {
    chain.unshift(d);
    if (path.dirname(d) === d) break;
  }
  for (const d of chain) {
    const st = fs.statSync(d);
    const bit = st.uid === user.uid ? 0o100 : st.gid === user.gid ? 0o010 : 0o001;
    if ((st.mode & bit) === 0) {
      log(`granting search permission (o+x) on ${d} so the "${SUPERUSER}" user can reach the data folder`);
      fs.chmodSync(d, (st.mode & 0o7777) | 0o001);
    }
  }
}

/**
 * The cluster's folder: `<dataDir>-<major>` (`.data/postgres-17`). A cluster made by one major version
 * does not start under another, so a server of another version makes a cluster of its own beside it.
 */
export function clusterDir(dataDir: string, major: string): string {
  return `${path.resolve(dataDir)}-${major}`;
}

async function initCluster(
  binDir: string,
  major: string,
  dataDir: string,
  runAs: RunAs | undefined,
  log: Log,
): Promise<void> {
  const versionFile = path.join(dataDir, 'PG_VERSION');
  if (fs.existsSync(versionFile)) {
    const clusterVersion = fs.readFileSync(versionFile, 'utf8').trim();
    if (clusterVersion !== major) {
      throw new Error(
        `${dataDir} holds a Postgres ${clusterVersion} cluster but the server binaries are version ${major}: ` +
          'remove the folder to start afresh (its data is lost) or install the matching server',
      );
    }
    if (runAs) chownTree(dataDir, runAs);
    fs.chmodSync(dataDir, 0o700);
    return;
  }
  if (fs.existsSync(dataDir) && fs.readdirSync(dataDir).length > 0) {
    throw new Error(`${dataDir} is not empty and holds no Postgres cluster: remove it or choose another folder`);
  }
  const started = Date.now();
  log(`initialising a Postgres ${major} cluster in ${dataDir}`);
  // initdb into a sibling and rename: an interrupted initdb never leaves a half-made cluster behind.
  const staging = `${dataDir}.initdb-${process.pid}`;
  fs.rmSync(staging, { recursive: true, force: true });
  fs.mkdirSync(staging, { mode: 0o700 });
  try {
    if (runAs) fs.chownSync(staging, runAs.uid, runAs.gid);
    await runCommand(
      path.join(binDir, 'initdb'),
      ['-D', staging, '-U', SUPERUSER, '--auth=trust', '--encoding=UTF8', '--locale=C'],
      { runAs, timeoutMs: 300_000 },
    );
    if (fs.existsSync(dataDir)) fs.rmdirSync(dataDir);
    fs.renameSync(staging, dataDir);
  } finally {
    fs.rmSync(staging, { recursive: true, force: true });
  }
  log(`cluster initialised in ${seconds(started)}`);
}

function chownTree(dir: string, owner: RunAs): void {
  const st = fs.lstatSync(dir);
  if (st.uid === owner.uid && st.gid === owner.gid) return; // initdb made it with the right owner
  const walk = (p: string): void => {
    fs.lchownSync(p, owner.uid, owner.gid);
    if (fs.lstatSync(p).isDirectory()) for (const entry of fs.readdirSync(p)) walk(path.join(p, entry));
  };
  walk(dir);
}

/**
 * A launcher that was killed can leave `postmaster.pid` behind. Postgres ignores it when that pid is
 * gone, but refuses to start when the pid now belongs to another process, which is common in
 * containers. A Postgres still serving this folder (an orphan of a killed run) is shut down.
 */
async function clearStaleLock(dataDir: string, log: Log): Promise<void> {
  const pidFile = path.join(dataDir, 'postmaster.pid');
  if (!fs.existsSync(pidFile)) return;
  const pid = Number(fs.readFileSync(pidFile, 'utf8').split('\n')[0]);
  if (Number.isInteger(pid) && pid > 0 && isAlive(pid)) {
    // Postgres processes run with their data folder as working directory; anything else reuses the pid.
    const cwd = processCwd(pid);
    if (cwd === undefined) return; // cannot tell (another user's process): let Postgres decide
    if (cwd === fs.realpathSync(dataDir)) {
      log(`stopping a Postgres left running on ${dataDir} by an earlier run (pid ${pid})`);
      for (const [signal, waitMs] of [
        ['SIGINT', 30_000],
        ['SIGQUIT', 5_000],
        ['SIGKILL', 5_000],
      ] as const) {
        signalQuietly(pid, signal);
        const deadline = Date.now() + waitMs;
        while (isAlive(pid) && Date.now() < deadline) await sleep(100);
        if (!isAlive(pid)) break;
      }
      if (isAlive(pid)) throw new Error(`a Postgres (pid ${pid}) still runs on ${dataDir} and would not stop`);
      return;
    }
  }
  log(`removing the stale ${pidFile} of a run that was killed`);
  fs.rmSync(pidFile, { force: true });
}

function signalQuietly(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(pid, signal);
  } catch {
    // already gone
  }
}

function processCwd(pid: number): string | undefined {
  try {
    return fs.readlinkSync(`/proc/${pid}/cwd`);
  } catch {
    return undefined;
  }
}

async function waitUntilReady(server: ChildHandle, port: number, signal?: AbortSignal): Promise<void> {
  const deadline = Date.now() + READY_TIMEOUT_MS;
  for (;;) {
    throwIfAborted(signal);
    const exit = server.exitInfo();
    if (exit) throw new Error(`postgres ${describeExit(exit)} before accepting connections`);
    const client = new pg.Client({
      host: '127.0.0.1',
      port,
      user: SUPERUSER,
      database: 'postgres',
      connectionTimeoutMillis: 2_000,
    });
    try {
      await client.connect();
      await client.query('SELECT 1');
      return;
    } catch (err) {
      if (Date.now() > deadline) {
        throw new Error(
          `postgres did not accept connections on port ${port} within ${READY_TIMEOUT_MS / 1000}s: ${(err as Error).message}`,
          { cause: err },
        );
      }
    } finally {
      await client.end().catch(() => {});
    }
    await sleep(100);
  }
}

async function createDatabase(port: number): Promise<void> {
  const client = new pg.Client({ host: '127.0.0.1', port, user: SUPERUSER, database: 'postgres' });
  await client.connect();
  try {
    const found = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [DATABASE_NAME]);
    if (found.rowCount === 0) {
      await client.query(`CREATE DATABASE ${DATABASE_NAME}`).catch((err: { code?: string }) => {
        if (err.code !== '42P04') throw err; // created concurrently by another launcher: fine
      });
    }
  } finally {
    await client.end();
  }
}

function withLogHint(err: Error, output: string, logFile?: string): Error {
  const where = logFile ? ` (full log: ${logFile})` : '';
  return new Error(`${err.message}${where}${output ? `\n${output}` : ''}`);
}
