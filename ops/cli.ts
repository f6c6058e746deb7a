import { Client, type Connection } from '@temporalio/client';
import type pg from 'pg';
import { connectTemporal, createPool, reaching } from '../config/clients';
import { ConfigError, loadCliConfig, loadTemporalCliConfig } from '../config';
import { getProduct } from '../store/products';
import { UsageError } from './cli-args';
import { temporalUi, type TemporalUi } from './temporal-ui';

/**
 * Runs an operator CLI: `parse` turns argv into arguments (throwing UsageError → exit 2 with the
 * usage; `'help'` → the usage, exit 0), then `run` returns the exit code. A configuration error
 * exits 2 naming what is missing; anything else thrown is printed and exits `failureCode` (1, or 2
 * for the CLIs whose exit 1 means "found something", so an alert can tell a finding from a failure).
 */
export function runCli<A>(
  name: string,
  usage: string,
  parse: (argv: string[]) => A | 'help',
  run: (args: A) => Promise<number>,
  failureCode = 1,
): void {
  const main = async (): Promise<number> => {
    let args: A | 'help';
    try {
      args = parse(process.argv.slice(2));
    } catch (err) {
      if (!(err instanceof UsageError)) throw err;
      console.error(`${name}: ${err.message}\n\n${usage}`);
      return 2;
    }
    if (args === 'help') {
      console.log(usage);
      return 0;
    }
    return run(args);
  };
  main().then(
    (code) => process.exit(code),
    (err: unknown) => {
      if (err instanceof ConfigError) {
        console.error(`${name}: ${err.message}`);
        process.exit(2);
      }
      console.error(`${name}: ${err instanceof Error ? err.message : String(err)}`);
      process.exit(failureCode);
    },
  );
}

/** The Postgres pool of one CLI run: its commands make one query at a time, two at most. */
export const CLI_POOL_SIZE = 2;

export interface CliClients {
  db?: pg.Pool;
  temporal?: Client;
  namespace: string;
  taskQueue: string;
  /** Links to the Temporal UI for what the CLI prints (TEMPORAL_UI_URL). */
  ui: TemporalUi;
  close(): Promise<void>;
}

/**
 * The clients an operator CLI needs, from the same configuration as the services: Postgres
 * (`required`, or `optional` when DATABASE_URL only adds checks) and, if asked, Temporal.
 */
export async function openCliClients(
  name: string,
  needs: { db: 'required' | 'optional'; temporal: boolean },
): Promise<CliClients> {
  const config = needs.db === 'required' ? loadCliConfig(process.env) : loadTemporalCliConfig(process.env);
  const log = (line: string) => console.error(`${name}: ${line}`);
  let connection: Connection | undefined;
  if (needs.temporal) {
    connection = await reaching({ name: 'Temporal', address: config.temporalAddress }, () =>
      connectTemporal(config.temporal, config.temporalConnectTimeoutMs),
    );
  }
  const db = config.databaseUrl ? createPool(config.databaseUrl, CLI_POOL_SIZE, log) : undefined;
  return {
    db,
    temporal: connection ? new Client({ connection, namespace: config.temporalNamespace }) : undefined,
    namespace: config.temporalNamespace,
    taskQueue: config.taskQueue,
    ui: temporalUi(config.temporalUiUrl, config.temporalNamespace),
    async close() {
      await connection?.close();
      await db?.end();
    },
  };
}

/**
 * Whether `sku` (when given) names no product: a misspelt SKU would read as nothing to do (no stuck
 * saga, no difference), so the CLIs that take one refuse it, exit 2 with the usage. Printed here.
 */
export async function unknownSku(name: string, db: pg.Pool, sku: string | undefined, usage: string): Promise<boolean> {
  if (sku === undefined || (await getProduct(db, sku))) return false;
  console.error(`${name}: unknown SKU "${sku}": no such product\n\n${usage}`);
  return true;
}
