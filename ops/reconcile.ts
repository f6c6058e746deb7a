// `npm run reconcile [-- --sku SKU]`: prints every difference between the ledger and the stock.
// Exit 0 clean, 1 differences, 2 usage or connection errors (an unknown SKU is a usage error), so a
// cron job or an alert can tell "the ledger is off" from "the check did not run".
import { reconcile } from '../store/reconcile';
import { openCliClients, runCli, unknownSku } from './cli';
import { parse, USAGE, type ReconcileArgs } from './reconcile-args';

async function main(args: ReconcileArgs): Promise<number> {
  const clients = await openCliClients('reconcile', { db: 'required', temporal: false });
  try {
    const db = clients.db!;
    if (await unknownSku('reconcile', db, args.sku, USAGE)) return 2;
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
