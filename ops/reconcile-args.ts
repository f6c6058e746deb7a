// The command line of `npm run reconcile` (ops/reconcile.ts runs it): its usage and its parsing,
// apart from the CLI's clients so the fast tier tests them.
import { parseCommandLine, UsageError } from './cli-args';

export const USAGE = `usage: npm run reconcile -- [--sku <sku>] [--json]

Recomputes every SKU's stock (or one SKU's) from the movement ledger and prints each difference.

  --sku   only this SKU (it must exist: a misspelt SKU is refused, not reported clean)
  --json  one JSON document: {"sku": ..., "differences": [{"sku", "what", "expected", "actual"}]}

Exit 0 when the ledger reconciles, 1 when it does not, 2 on usage errors (an unknown SKU), a
configuration error or a database that cannot be reached.

Environment: DATABASE_URL (required).`;

export interface ReconcileArgs {
  sku?: string;
  json: boolean;
}

export function parse(argv: string[]): ReconcileArgs | 'help' {
  const { values, positionals } = parseCommandLine(argv, {
    sku: { type: 'string' },
    json: { type: 'boolean', default: false },
    help: { type: 'boolean', short: 'h', default: false },
  });
  if (values.help) return 'help';
  if (positionals.length) {
    throw new UsageError(`unexpected arguments: ${positionals.join(' ')} (one SKU is given as --sku <sku>)`);
  }
  if (values.sku !== undefined && !values.sku.trim()) throw new UsageError('--sku: empty');
  return { sku: values.sku?.trim(), json: values.json };
}
