import { execFile } from 'node:child_process';
import path from 'node:path';
import test from 'ava';
import { assertInvariants } from '../helpers/db';
import { sessionOf, startSystem, type System } from '../helpers/system';

const repoRoot = path.resolve(__dirname, '../..');

let sys: System;
test.before(async () => {
  sys = await startSystem();
});
test.after.always(async () => {
  await sys?.close();
});

/** The CLI as support runs it, against this file's system (its task queue, so its worker runs the saga). */
function supportCli(
  args: string[],
  env: Record<string, string | undefined> = {},
): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      ['--import', 'tsx', 'ops/support.ts', ...args],
      {
        cwd: repoRoot,
        env: { ...process.env, TEMPORAL_NAMESPACE: 'default', TASK_QUEUE: sys.taskQueue, ...env },
        timeout: 60_000,
      },
      (err, stdout, stderr) => {
        const code = err ? (typeof err.code === 'number' ? err.code : 1) : 0;
        resolve({ code, stdout, stderr });
      },
    );
  });
}

async function confirmedPurchase(sku: string, buyerId: string): Promise<string> {
  const res = await sys.buy(sku, buyerId);
  if (res.status !== 201) throw new Error(`buying: ${res.status} ${JSON.stringify(res.body)}`);
  await sys.pay(await sessionOf(sys.db, res.body.purchaseId), 'succeeded');
  await sys.waitForPurchase(res.body.purchaseId, (p) => p.status === 'confirmed');
  return res.body.purchaseId as string;
}

async function refundsOf(purchaseId: string): Promise<number> {
  const { body } = await sys.emulatorCall('GET', '/_emulator/events?type=refund.created');
  const events = body.data as { event: { data: { object: { metadata?: Record<string, string> } } } }[];
  return events.filter((e) => e.event.data.object.metadata?.purchase_id === purchaseId).length;
}

async function stock(sku: string) {
  return (await sys.api('GET', `/v1/products/${sku}`)).body;
}

test('a refund from the CLI refunds a confirmed purchase, and running it again does not refund twice', async (t) => {
  const sku = await sys.createProduct();
  const purchaseId = await confirmedPurchase(sku, 'cli-alice');

  const first = await supportCli(['refund', purchaseId, '--reason', 'wrong size shipped']);
  t.is(first.code, 0, first.stderr);
  t.regex(
    first.stdout,
    new RegExp(`purchase ${purchaseId}: refund succeeded, not restocked; reason: wrong size shipped`),
  );
  const p = await sys.waitForPurchase(purchaseId, (r) => r.status === 'refunded');
  t.is(p.refund_reason, 'wrong size shipped');

  const second = await supportCli(['refund', purchaseId, '--reason', 'asked again']);
  t.is(second.code, 0, second.stderr);
  t.regex(second.stdout, /refund succeeded/);
  t.is(await refundsOf(purchaseId), 1);
  const { rows } = await sys.db.query('SELECT actor, action FROM audit_log WHERE purchase_id = $1 ORDER BY id', [
    purchaseId,
  ]);
  t.deepEqual(
    rows.map((r) => r.action),
    ['refund_requested', 'refunded'],
  );
  for (const r of rows) t.regex(r.actor, /^support-cli:\S+$/);
  t.like(await stock(sku), { available: 4 }, 'not restocked');
  await assertInvariants(t, sys.db, sku);
});

test('a refund with --restock puts the unit back on sale', async (t) => {
  const sku = await sys.createProduct();
  const purchaseId = await confirmedPurchase(sku, 'cli-bob');
  t.like(await stock(sku), { available: 4, sold: 1 });

  const out = await supportCli(['refund', purchaseId, '--reason', 'duplicate order', '--restock']);
  t.is(out.code, 0, out.stderr);
  t.regex(out.stdout, /refund succeeded, unit back on sale/);
  t.like(await stock(sku), { available: 5, sold: 0 });
  t.is(await refundsOf(purchaseId), 1);
  await assertInvariants(t, sys.db, sku);
});

test('an unknown purchase exits 1 with a message', async (t) => {
  const out = await supportCli(['refund', 'no-such-purchase', '--reason', 'test']);
  t.is(out.code, 1);
  t.regex(out.stderr, /no purchase no-such-purchase/);
});

test('a purchase that was never paid is not refundable: exit 1 and nothing refunded', async (t) => {
  const sku = await sys.createProduct();
  const res = await sys.buy(sku, 'cli-carol');
  t.is(res.status, 201);
  const out = await supportCli(['refund', res.body.purchaseId, '--reason', 'test']);
  t.is(out.code, 1);
  t.regex(out.stderr, /not refundable: purchase \S+ is awaiting_payment/);
  t.is(await refundsOf(res.body.purchaseId), 0);
  t.is((await sys.api('POST', `/v1/purchases/${res.body.purchaseId}/cancel`)).status, 200);
});

test('usage errors exit 2 with the usage', async (t) => {
  for (const args of [
    [],
    ['refund'],
    ['refund', 'p1'],
    ['refund', 'p1', '--reason', '  '],
    ['refund', 'p1', 'p2', '--reason', 'x'],
    ['refund', 'p1', '--reason', 'x', '--force'],
    ['refund', 'p1', '--reason'],
    ['refnud', 'p1', '--reason', 'x'],
    ['refund-oversold', '--reason', 'x'],
    ['refund-oversold', 'sku-1', '--reason', 'x', '--restock'],
  ]) {
    const out = await supportCli(args);
    t.is(out.code, 2, `${args.join(' ')}: ${out.stderr}`);
    t.regex(out.stderr, /usage: npm run support -- refund <purchaseId>/, args.join(' '));
  }
});

test('without DATABASE_URL the CLI stops with a message naming it, exit 2', async (t) => {
  const out = await supportCli(['refund', 'p1', '--reason', 'x'], { DATABASE_URL: '' });
  t.is(out.code, 2);
  t.regex(out.stderr, /DATABASE_URL is required/);
});

test('refund-oversold refunds exactly the orders sold beyond stock and gives their units back to the allowance', async (t) => {
  const sku = await sys.createProduct({ stock: 1, oversellAllowance: 1 });
  const first = await confirmedPurchase(sku, 'cli-real');
  const second = await confirmedPurchase(sku, 'cli-over');
  t.like(await stock(sku), { sold: 2, oversold: 1, soldOut: true });

  const out = await supportCli(['refund-oversold', sku, '--reason', 'sold beyond stock; sorry']);
  t.is(out.code, 0, out.stderr);
  t.regex(out.stdout, /1 of 1 oversold order\(s\) of \S+ refunded/);
  t.is(await refundsOf(second), 1);
  t.is(await refundsOf(first), 0);
  t.like(await stock(sku), { sold: 1, oversold: 0, available: 0 });
  const again = await supportCli(['refund-oversold', sku, '--reason', 'sold beyond stock; sorry']);
  t.is(again.code, 0);
  t.regex(again.stdout, /no orders of \S+ are flagged as oversold/);
  t.is(await refundsOf(second), 1);
  await assertInvariants(t, sys.db, sku);
});
