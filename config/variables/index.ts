import { SERVICE_VARIABLES } from './service';
import { TOOL_VARIABLES } from './tools';
import { TRACING_VARIABLES } from './tracing';
import { TUNING_VARIABLES } from './tuning';
import type { Variable } from './types';

export type { ConfigProcess, Section, Tool, Variable } from './types';

// Every environment variable the project reads, in one table: the loaders of config/ take each
// default and bound from it (config/reader.ts), and `npm run docs` writes the README's short table,
// docs/configuration.md's full one and .env.example from it (dev/docs/configuration.ts). A test
// (test/fast/config/variables.test.ts) fails when a generated file or a variable read in the code
// is not in step with this table.

export const VARIABLES: readonly Variable[] = [
  ...SERVICE_VARIABLES,
  ...TRACING_VARIABLES,
  ...TUNING_VARIABLES,
  ...TOOL_VARIABLES,
];

const BY_NAME = new Map(VARIABLES.map((v) => [v.name, v]));

/** The table's row of a variable; a name the table does not list is a programming error. */
export function variable(name: string): Variable {
  const row = BY_NAME.get(name);
  if (!row) throw new Error(`${name} is not in the configuration table (config/variables)`);
  return row;
}
