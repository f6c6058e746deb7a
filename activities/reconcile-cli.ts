import pg from 'pg';
import { reconcile } from './reconcile';

// `npm run reconcile [-- SKU]`: prints every difference between the ledger and the stock, exits 1 if any.
async function main(): Promise<number> {
  const url = process.env.DATABASE_URL;
  if (!url) {
    console.error('DATABASE_URL is required (the URL `npm start` prints)');
    return 2;
  }
  const db = new pg.Pool({ connectionString: url, max: 1 });
  try {
    const diffs = await reconcile(db, process.argv[2]);
    if (diffs.length === 0) {
      console.log('ledger reconciles: no differences');
      return 0;
    }
    for (const d of diffs) console.log(`${d.sku}: ${d.what}: expected ${d.expected}, found ${d.actual}`);
    return 1;
  } finally {
    await db.end();
  }
}

main().then(
  (code) => process.exit(code),
  (err) => {
    console.error(err instanceof Error ? err.message : err);
    process.exit(2);
  },
);
