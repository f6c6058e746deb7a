import { Connection } from '@temporalio/client';

/** A bad command line: the CLI prints the message and its usage, and exits 2. */
export class UsageError extends Error {}

/**
 * Runs an operator CLI: `parse` turns argv into arguments (throwing UsageError → exit 2 with the
 * usage; `'help'` → the usage, exit 0), then `run` returns the exit code. Anything else thrown is
 * printed and exits 1.
 */
export function runCli<A>(
  name: string,
  usage: string,
  parse: (argv: string[]) => A | 'help',
  run: (args: A) => Promise<number>,
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
      console.error(err);
      process.exit(1);
    },
  );
}

/** Connects to Temporal from TEMPORAL_ADDRESS / TEMPORAL_NAMESPACE; null (after saying why) when it cannot. */
export async function connectTemporalFromEnv(
  name: string,
): Promise<{ connection: Connection; namespace: string } | null> {
  const address = process.env.TEMPORAL_ADDRESS || '127.0.0.1:7233';
  const namespace = process.env.TEMPORAL_NAMESPACE || 'default';
  try {
    return { connection: await Connection.connect({ address, connectTimeout: '10s' }), namespace };
  } catch (err) {
    console.error(`${name}: cannot reach Temporal at ${address} (TEMPORAL_ADDRESS): ${(err as Error).message}`);
    return null;
  }
}
