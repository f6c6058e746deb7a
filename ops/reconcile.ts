// `npm run reconcile [-- --sku SKU]`: prints every difference between the ledger and the stock.
// Exit 0 clean, 1 differences, 2 usage or connection errors (an unknown SKU is a usage error), so a
// cron job or an alert can tell "the ledger is off" from "the check did not run".
import { getProduct } from '../store/products';
import { reconcile } from '../store/reconcile';
import { openCliClients, parseCommandLine, runCli, UsageError } from './cli';

const USAGE = `usage: npm run reconcile [-- --sku <sku>] [--json]

Recomputes every SKU's stock (or one SKU's) from the movement ledger and prints each difference.

  --sku   only this SKU (it must exist: a misspelt SKU is refused, not reported clean)
  --json  one JSON document: {"sku": ..., "differences": [{"sku", "what", "expected", "actual"}]}

Exit 0 when the ledger reconciles, 1 when it does not, 2 on usage errors (an unknown SKU), a
configuration error or a database that cannot be reached.

Environment: DATABASE_URL (required).`;

interface Args {
  sku?: string;
  json: boolean;
}

function parse(argv: string[]): Args | 'help' {
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

async function main(args: Args): Promise<number> {
  const clients = await openCliClients('reconcile', { db: 'required', temporal: false });
  try {
    const db = clients.db!;
    if (args.sku !== undefined && !(await getProduct(db, args.sku))) {
      console.error(`reconcile: unknown SKU "${args.sku}": no such product\n\n${USAGE}`);
      return 2;
    }
    const diffs = await reconcile(db, args.sku);
    if (args.json) {
      console.log(JSON.stringify({ sku: args.sku ?? null, differences: diffs }, null, 2));
    } else if (diffs.length === 0) {
      console.log(`ledger reconciles${args.sku ? ` for ${args.sku}` : ''}: no differences`);
    } else {
      for (const d of diffs) console.log(`${d.sku}: ${d.what}: expected ${d.expected}, found ${d.actual}`);
    }
    return diffs.length === 0 ? 0 : 1;
  } finally {
    await clients.close();
  }
}

// A failure to reach Postgres is exit 2: exit 1 means the ledger was read and is off.
runCli('reconcile', USAGE, parse, main, 2);
