import { parseArgs, type ParseArgsConfig } from 'node:util';

// The command-line half of the operator CLIs, apart from ops/cli.ts (which imports the Temporal
// client and pg): each CLI's `<name>-args.ts` builds on it, so its parsing can be tested without
// starting the CLI or loading its clients.

/** A bad command line: the CLI prints the message and its usage, and exits 2. */
export class UsageError extends Error {}

type Options = NonNullable<ParseArgsConfig['options']>;

/**
 * `parseArgs` with positionals allowed and unknown options refused, its complaints (an unknown
 * option, a missing value) thrown as UsageError so the CLI prints them with its usage and exits 2.
 */
export function parseCommandLine<O extends Options>(argv: string[], options: O) {
  try {
    return parseArgs({ args: argv, allowPositionals: true, strict: true, options });
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
}
