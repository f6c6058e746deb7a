import test from 'ava';
import { takeHold } from '../../store/holds';
import { createProduct } from '../../store/products';
import { USAGE } from '../../ops/reconcile-args';
import { runOpsCli } from '../helpers/attention';
import { testDb, uniqueSku } from '../helpers/db';

// `npm run reconcile` as a cron job runs it: its exit code is the alert. 0 the ledger reconciles,
// 1 it does not, 2 the check itself could not run (bad usage, an unknown SKU, no database).

const db = testDb(3);
test.after.always(() => db.end());

const reconcileCli = (args: string[], env: Record<string, string> = {}) => runOpsCli('reconcile', args, env);

async function product(): Promise<string> {
  const sku = uniqueSku('recli');
  await createProduct(db, { sku, name: 'x', priceCents: 1, currency: 'usd', stock: 3 });
  await takeHold(db, { purchaseId: `${sku}-1`, sku, buyerId: 'a', quantity: 1 });
  return sku;
}

test('reconcile exits 0 on a clean ledger, and 1 naming the difference once stock is changed behind it', async (t) => {
  const sku = await product();
  const clean = await reconcileCli(['--sku', sku]);
  t.is(clean.code, 0, clean.stderr);
  t.is(clean.stdout.trim(), `ledger reconciles for ${sku}: no differences`);

  await db.query('UPDATE stock_buckets SET available = available - 1 WHERE sku = $1', [sku]);
  const off = await reconcileCli(['--sku', sku]);
  t.is(off.code, 1, off.stderr);
  t.true(off.stdout.includes(`${sku}: available (ledger vs buckets): expected 2, found 1`), off.stdout);
  const json = await reconcileCli(['--sku', sku, '--json']);
  t.is(json.code, 1, json.stderr);
  t.like(JSON.parse(json.stdout), {
    sku,
    differences: [{ sku, what: 'available (ledger vs buckets)', expected: 2, actual: 1 }],
  });

  // Without --sku every SKU is checked: this one's difference is among them.
  const all = await reconcileCli([]);
  t.is(all.code, 1, all.stderr);
  t.true(all.stdout.includes(`${sku}: available (ledger vs buckets)`));
});

test('reconcile refuses an unknown SKU with exit 2 naming it, instead of reporting it clean', async (t) => {
  const missing = uniqueSku('nosuch');
  const out = await reconcileCli(['--sku', missing]);
  t.is(out.code, 2, out.stdout);
  t.true(out.stderr.includes(`unknown SKU "${missing}"`), out.stderr);
  t.is(out.stdout, '');
});

// Every bad command line is a UsageError of the parser (test/fast/ops/reconcile-args.test.ts): one
// run proves the CLI prints it with the usage and exits 2.
test('reconcile refuses bad usage with exit 2 and its usage', async (t) => {
  const out = await reconcileCli(['--sku', 'a', 'b']);
  t.is(out.code, 2, out.stdout);
  t.is(out.stderr, `reconcile: unexpected arguments: b (one SKU is given as --sku <sku>)\n\n${USAGE}\n`);
  t.is(out.stdout, '');
});

test('reconcile exits 2 when the database cannot be reached or is not configured', async (t) => {
  const down = await reconcileCli([], { DATABASE_URL: 'postgres://postgres@127.0.0.1:1/flashsale' });
  t.is(down.code, 2, down.stdout);
  t.regex(down.stderr, /^reconcile: /);
  const unset = await reconcileCli([], { DATABASE_URL: '' });
  t.is(unset.code, 2);
  t.regex(unset.stderr, /DATABASE_URL is required/);
});
