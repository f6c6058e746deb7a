// `npm run reconcile [-- SKU]`: prints every difference between the ledger and the stock, exits 1 if any.
import { reconcile } from '../store/reconcile';
import { openCliClients, runCli, UsageError } from './cli';

const USAGE = `usage: npm run reconcile [-- <sku>]

Recomputes every SKU's stock (or one SKU's) from the movement ledger and prints each difference.
Exit 0 when the ledger reconciles, 1 when it does not, 2 on usage or configuration errors.

Environment: DATABASE_URL (required).`;

function parse(argv: string[]): { sku?: string } | 'help' {
  if (argv.includes('--help') || argv.includes('-h')) return 'help';
  if (argv.length > 1) throw new UsageError(`unexpected arguments: ${argv.slice(1).join(' ')}`);
  return { sku: argv[0] };
}

async function main(args: { sku?: string }): Promise<number> {
  const clients = await openCliClients('reconcile', { db: 'required', temporal: false });
  try {
    const diffs = await reconcile(clients.db!, args.sku);
    if (diffs.length === 0) {
      console.log('ledger reconciles: no differences');
      return 0;
    }
    for (const d of diffs) console.log(`${d.sku}: ${d.what}: expected ${d.expected}, found ${d.actual}`);
    return 1;
  } finally {
    await clients.close();
  }
}

runCli('reconcile', USAGE, parse, main);
