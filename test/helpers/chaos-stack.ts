// A stack of its own for the chaos test: its Postgres, its Temporal dev server (state on disk, so a
// restart keeps every saga), a payments emulator, and the API and the worker as child processes,
// each of which can be killed or restarted while purchases are under way. The shared stack that
// `npm test` started is never touched, so the other test files run on undisturbed.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import pg from 'pg';
import { startEmulator, type Emulator } from '@flash-sale/stripe-emulator';
import { startPostgres, type PostgresServer } from '../../dev/postgres';
import { describeExit, nodeScript, readTail, sleep, spawnChild, type ChildHandle, type Log } from '../../dev/proc';
import { freePort } from '../../dev/ports';
import { startTemporal, type TemporalServer } from '../../dev/temporal';
import { migrate } from '../../store/migrate';

const repoRoot = path.resolve(__dirname, '../..');
export const CHAOS_ADMIN_TOKEN = 'chaos-admin-token';
/** The HS256 secret the API verifies buyer tokens with (sign them with config/buyer-tokens.ts). */
export const CHAOS_BUYER_TOKEN_SECRET = 'chaos-buyer-token-secret-0123456789abcdef';
/** The secret the API verifies Stripe signatures with (sign test events with it). */
export const CHAOS_WEBHOOK_SECRET = 'whsec_chaos_secret';
const WEBHOOK_SECRET = CHAOS_WEBHOOK_SECRET;
const READY_TIMEOUT_MS = 90_000;

export interface ChaosStack {
  /** Holds the servers' data and every process's log; kept after a failed run. */
  dir: string;
  /** The test's own pool (an error listener keeps a Postgres restart from crashing the test). */
  db: pg.Pool;
  temporal: Client;
  emulator: Emulator;
  apiUrl: string;
  taskQueue: string;
  /** SIGKILL: the worker gets no chance to finish anything. */
  killWorker(): Promise<void>;
  startWorker(): Promise<void>;
  /** Fast shutdown (every connection dropped), then a start on the same port; returns how long it was down. */
  restartPostgres(): Promise<number>;
  /** SIGTERM, then a start on the same port and file; returns how long it was down. */
  restartTemporal(): Promise<number>;
  /** Fast shutdown of Postgres, left down (an outage) until `startPostgres`, on the same port and data. */
  stopPostgres(): Promise<void>;
  startPostgres(): Promise<void>;
  /** SIGTERM to the Temporal server, left down until `startTemporal`, on the same port and file. */
  stopTemporal(): Promise<void>;
  startTemporal(): Promise<void>;
  /** API or worker exits this test did not cause, each with the end of its log. */
  unexpectedExits: string[];
  stop(opts: { keepDir: boolean }): Promise<void>;
}

/** A Node child running one of the service's entry points, restartable, with its output in a log file. */
class ServiceProcess {
  private child: ChildHandle | undefined;
  private expectedExit = false;

  constructor(
    readonly name: string,
    private readonly entry: string,
    private readonly env: NodeJS.ProcessEnv,
    private readonly logFile: string,
    private readonly ready: (logSince: () => string) => Promise<boolean>,
    private readonly unexpected: string[],
  ) {}

  async start(): Promise<void> {
    const offset = fs.existsSync(this.logFile) ? fs.statSync(this.logFile).size : 0;
    this.expectedExit = false;
    const child = spawnChild({
      name: this.name,
      command: process.execPath,
      args: nodeScript(path.join(repoRoot, this.entry)),
      cwd: repoRoot,
      env: this.env,
      logFile: this.logFile,
      deathSignal: 'SIGKILL',
      stopSteps: [['SIGTERM', 15_000]],
    });
    this.child = child;
    void child.exited.then((info) => {
      if (!this.expectedExit) {
        this.unexpected.push(`${this.name} ${describeExit(info)}:\n${readTail(this.logFile, 30)}`);
      }
    });
    const logSince = (): string => {
      const text = fs.readFileSync(this.logFile, 'utf8');
      return text.slice(offset);
    };
    const deadline = Date.now() + READY_TIMEOUT_MS;
    for (;;) {
      const exit = child.exitInfo();
      if (exit)
        throw new Error(`${this.name} ${describeExit(exit)} before it was ready:\n${readTail(this.logFile, 15)}`);
      if (await this.ready(logSince)) return;
      if (Date.now() > deadline) throw new Error(`${this.name} not ready in time:\n${readTail(this.logFile, 15)}`);
      await sleep(100);
    }
  }

  async kill(): Promise<void> {
    const child = this.child;
    if (!child || child.exitInfo()) return;
    this.expectedExit = true;
    process.kill(child.pid, 'SIGKILL');
    await child.exited;
  }

  async stop(): Promise<void> {
    this.expectedExit = true;
    await this.child?.stop().catch(() => {});
  }
}

/** Starts the chaos stack: about 10–20 s on a small machine (initdb, the Temporal server, the worker's bundle). */
export async function startChaosStack(log: Log): Promise<ChaosStack> {
  // The prefix and the pid file let test/run.ts sweep this folder if the test process is killed.
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'flash-sale-test-chaos-'));
  fs.writeFileSync(path.join(dir, 'launcher.pid'), String(process.pid));
  fs.chmodSync(dir, 0o711); // as root, Postgres runs as `postgres` and must reach its folder
  const quiet: Log = (line) => log(`  ${line}`);

  const pgPort = await freePort();
  const pgOptions = {
    dataDir: path.join(dir, 'postgres'),
    port: pgPort,
    log: quiet,
    logFile: path.join(dir, 'pg.log'),
  };
  const temporalOptions = {
    dbFile: path.join(dir, 'temporal.db'),
    port: await freePort(),
    uiPort: await freePort(),
    namespace: 'default',
    log: quiet,
    logFile: path.join(dir, 'temporal.log'),
  };
  let postgres: PostgresServer | undefined;
  let temporalServer: TemporalServer | undefined;
  let emulator: Emulator | undefined;
  const unexpectedExits: string[] = [];
  const services: ServiceProcess[] = [];
  const db = new pg.Pool({ connectionString: `postgres://postgres@127.0.0.1:${pgPort}/flashsale`, max: 5 });
  db.on('error', () => {}); // idle clients dropped by the restart; the next query connects again
  let connection: Connection | undefined;

  const stop = async ({ keepDir }: { keepDir: boolean }): Promise<void> => {
    for (const s of services.reverse()) await s.stop();
    await emulator?.close().catch(() => {});
    await connection?.close().catch(() => {});
    await db.end().catch(() => {});
    await temporalServer?.stop().catch(() => {});
    await postgres?.stop().catch(() => {});
    if (!keepDir) fs.rmSync(dir, { recursive: true, force: true });
  };

  try {
    const [pgServer, tServer] = await Promise.all([startPostgres(pgOptions), startTemporal(temporalOptions)]);
    postgres = pgServer;
    temporalServer = tServer;
    await migrate(postgres.url, quiet);
    emulator = await startEmulator({
      port: 0,
      webhookSecret: WEBHOOK_SECRET,
      retryBaseMs: 200,
      // Stripe retries for days; here deliveries outlast every outage of the run.
      maxDeliveryAttempts: 40,
      deliveryTimeoutMs: 5_000,
    });
    connection = await Connection.connect({ address: temporalServer.address });
    const apiPort = await freePort();
    const apiUrl = `http://127.0.0.1:${apiPort}`;
    emulator.setWebhookUrl(`${apiUrl}/v1/webhooks/stripe`);
    const taskQueue = 'chaos-purchases';
    const common = {
      ...process.env,
      DATABASE_URL: postgres.url,
      TEMPORAL_ADDRESS: temporalServer.address,
      TEMPORAL_NAMESPACE: 'default',
      TASK_QUEUE: taskQueue,
      STRIPE_SECRET_KEY: 'sk_test_emulator',
      STRIPE_API_URL: emulator.url,
      STRIPE_EMULATOR: '1', // says STRIPE_API_URL is the payments emulator, on purpose
    };
    const api = new ServiceProcess(
      'api',
      'api/main.ts',
      {
        ...common,
        PORT: String(apiPort),
        HOST: '127.0.0.1',
        STRIPE_WEBHOOK_SECRET: WEBHOOK_SECRET,
        ADMIN_TOKEN: CHAOS_ADMIN_TOKEN,
        SUPPORT_TOKEN: 'chaos-support-token',
        BUYER_TOKEN_SECRET: CHAOS_BUYER_TOKEN_SECRET,
        BOT_CHECK_SECRET: 'chaos-bot-check-secret-0123456789abcdef',
        SHUTDOWN_GRACE_MS: '0',
        GATE_RESYNC_MS: '1000',
      },
      path.join(dir, 'api.log'),
      async () => (await fetch(`${apiUrl}/readyz`).catch(() => null))?.status === 200,
      unexpectedExits,
    );
    const worker = new ServiceProcess(
      'worker',
      'worker/main.ts',
      { ...common, PUBLIC_URL: apiUrl, SWEEP_INTERVAL_MS: '500', WORKER_METRICS_PORT: '0' },
      path.join(dir, 'worker.log'),
      async (logSince) => logSince().includes('polling task queue'),
      unexpectedExits,
    );
    services.push(api, worker);
    await Promise.all([api.start(), worker.start()]);

    return {
      dir,
      db,
      temporal: new Client({ connection, namespace: 'default' }),
      emulator,
      apiUrl,
      taskQueue,
      killWorker: () => worker.kill(),
      startWorker: () => worker.start(),
      async restartPostgres() {
        const started = Date.now();
        await postgres!.stop();
        postgres = await startPostgres(pgOptions);
        return Date.now() - started;
      },
      async restartTemporal() {
        const started = Date.now();
        await temporalServer!.stop();
        temporalServer = await startTemporal(temporalOptions);
        return Date.now() - started;
      },
      async stopPostgres() {
        await postgres!.stop();
      },
      async startPostgres() {
        postgres = await startPostgres(pgOptions);
      },
      async stopTemporal() {
        await temporalServer!.stop();
      },
      async startTemporal() {
        temporalServer = await startTemporal(temporalOptions);
      },
      unexpectedExits,
      stop,
    };
  } catch (err) {
    await stop({ keepDir: true });
    throw new Error(`the chaos stack did not start (logs in ${dir}): ${(err as Error).message}`, { cause: err });
  }
}
