import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import test from 'ava';
import { nodeScript } from '../../dev/proc';
import { takeHold } from '../../store/holds';
import { createProduct } from '../../store/products';
import { reconcile } from '../../store/reconcile';
import { testDb, uniqueSku } from '../helpers/db';

const run = promisify(execFile);
const db = testDb(5);
test.after.always(() => db.end());

async function reconcileCli(sku: string): Promise<{ code: number; out: string }> {
  try {
    const { stdout } = await run(
      process.execPath,
      [...nodeScript(path.join(__dirname, '../../ops/reconcile.ts')), '--sku', sku],
      {
        env: process.env,
      },
    );
    return { code: 0, out: stdout };
  } catch (err) {
    const e = err as { code: number; stdout: string };
    return { code: e.code, out: e.stdout };
  }
}

test('reconcile is clean after real movements and names a counter changed behind the ledger', async (t) => {
  const sku = uniqueSku('rec');
  await createProduct(db, { sku, name: 'x', priceCents: 1, currency: 'usd', stock: 5, buckets: 2 });
  await takeHold(db, { purchaseId: `${sku}-1`, sku, buyerId: 'a', quantity: 1 });
  t.deepEqual(await reconcile(db, sku), []);
  t.like(await reconcileCli(sku), { code: 0 });

  // Someone edits stock by hand, bypassing the ledger: the CLI must say what and exit non-zero.
  await db.query('UPDATE stock_buckets SET available = available + 1 WHERE sku = $1 AND bucket = 0', [sku]);
  const diffs = await reconcile(db, sku);
  t.deepEqual(
    diffs.map((d) => d.what),
    ['available (ledger vs buckets)', 'total = available + held + sold'],
  );
  const cli = await reconcileCli(sku);
  t.is(cli.code, 1);
  t.regex(cli.out, /available \(ledger vs buckets\): expected 4, found 5/);
});

test('the movement ledger refuses to be rewritten', async (t) => {
  const sku = uniqueSku('rec');
  await createProduct(db, { sku, name: 'x', priceCents: 1, currency: 'usd', stock: 1 });
  await t.throwsAsync(db.query('UPDATE stock_movements SET available_delta = 99 WHERE sku = $1', [sku]), {
    message: /append-only/,
  });
  await t.throwsAsync(db.query('DELETE FROM stock_movements WHERE sku = $1', [sku]), { message: /append-only/ });
});
