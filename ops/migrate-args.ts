// The command line of `npm run migrate` (ops/migrate.ts runs it): its usage and its parsing, apart
// from the migrations so the fast tier tests them. It takes no argument: anything else (a
// `--dry-run` an operator hoped for) is a usage error, never a migration.
import { parseCommandLine, UsageError } from './cli-args';

export const USAGE = `usage: npm run migrate

Applies every migration in store/migrations/ that the database has not applied yet, recording the
sha256 of each file. Refuses, applying nothing (exit 1), when a migration already applied has been
edited since or is missing on disk: an applied migration is never edited, a change is a new file.
It takes no arguments and has no dry run: the applied versions are in the table
schema_migrations; the files not listed there are applied, in name order.
Environment: DATABASE_URL (required).`;

export function parse(argv: string[]): Record<string, never> | 'help' {
  const { values, positionals } = parseCommandLine(argv, {
    help: { type: 'boolean', short: 'h', default: false },
  });
  if (values.help) return 'help';
  if (positionals.length) throw new UsageError(`unexpected arguments: ${positionals.join(' ')}`);
  return {};
}
