import test, { type ExecutionContext } from 'ava';
import {
  allowRefunds,
  confirmedPurchase,
  REFUSAL,
  refundFailedAfterSagaEnded,
  refusedLateRefund,
  refusedStrayRefund,
  runOpsCli,
} from '../helpers/attention';
import { assertInvariants } from '../helpers/db';
import { inBatches, until } from '../helpers/poll';
import { USAGE } from '../../ops/support-args';
import { asBuyer, startSystem, type System } from '../helpers/system';

let sys: System;
test.before(async () => {
  sys = await startSystem();
});
test.after.always(async () => {
  await sys?.close();
});

/**
 * A system of the test's own, for tests that make Stripe refuse refunds: an emulator fault would
 * refuse the refunds of every other test sharing the emulator. Those tests run serially: each is a
 * whole system (API, worker, emulator), and a few at once already crowd a small machine.
 */
async function refusingSystem(t: ExecutionContext): Promise<System> {
  const own = await startSystem();
  t.teardown(() => own.close());
  return own;
}

/** The CLI as support runs it, against a system (its task queue, so its worker runs the saga). */
function supportCli(
  args: string[],
  env: Record<string, string | undefined> = {},
  on: System = sys,
): Promise<{ code: number; stdout: string; stderr: string }> {
  return runOpsCli('support', args, { TASK_QUEUE: on.taskQueue, ...env });
}

async function refundsOf(purchaseId: string, on: System = sys): Promise<number> {
  const { body } = await on.emulatorCall('GET', '/_emulator/events?type=refund.created');
  const events = body.data as { event: { data: { object: { metadata?: Record<string, string> } } } }[];
  return events.filter((e) => e.event.data.object.metadata?.purchase_id === purchaseId).length;
}

test('a refund from the CLI refunds a confirmed purchase, and running it again does not refund twice', async (t) => {
  const sku = await sys.createProduct();
  const purchaseId = (await confirmedPurchase(sys, 'cli-alice', sku)).purchaseId;

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
  t.like(await sys.stock(sku), { available: 4 }, 'not restocked');
  await assertInvariants(t, sys.db, sku);
});

test('a refund with --restock puts the unit back on sale', async (t) => {
  const sku = await sys.createProduct();
  const purchaseId = (await confirmedPurchase(sys, 'cli-bob', sku)).purchaseId;
  t.like(await sys.stock(sku), { available: 4, sold: 1 });

  const out = await supportCli(['refund', purchaseId, '--reason', 'duplicate order', '--restock']);
  t.is(out.code, 0, out.stderr);
  t.regex(out.stdout, /refund succeeded, unit back on sale/);
  t.like(await sys.stock(sku), { available: 5, sold: 0 });
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
  t.is(
    (await sys.api('POST', `/v1/purchases/${res.body.purchaseId}/cancel`, undefined, await asBuyer('cli-carol')))
      .status,
    200,
  );
});

// Every bad command line is a UsageError of the parser (test/fast/ops/support-args.test.ts): one
// run proves the CLI prints it with the usage and exits 2.
test('a usage error exits 2 with the message and the usage', async (t) => {
  const out = await supportCli(['refnud', 'p1', '--reason', 'x']);
  t.is(out.code, 2, out.stderr);
  t.is(out.stderr, `support: unknown command: refnud\n\n${USAGE}\n`);
  t.is(out.stdout, '');
});

test('without DATABASE_URL the CLI stops with a message naming it, exit 2', async (t) => {
  const out = await supportCli(['refund', 'p1', '--reason', 'x'], { DATABASE_URL: '' });
  t.is(out.code, 2);
  t.regex(out.stderr, /DATABASE_URL is required/);
});

test('a misspelt SKU is exit 2 naming it, not "nothing to do"; the lookups need no Temporal', async (t) => {
  for (const argv of [
    ['refund-oversold', 'no-such-sku', '--reason', 'x'],
    ['list-attention', '--sku', 'no-such-sku'],
    ['disputes', '--sku', 'no-such-sku'],
  ]) {
    const out = await supportCli(argv);
    t.is(out.code, 2, `${argv.join(' ')}: ${out.stdout}${out.stderr}`);
    t.regex(out.stderr, /unknown SKU "no-such-sku"/);
  }
  const sku = await sys.createProduct();
  // Temporal unreachable: what support reads from the database still answers.
  const down = { TEMPORAL_ADDRESS: '127.0.0.1:1', TEMPORAL_CONNECT_TIMEOUT_MS: '500' };
  for (const argv of [
    ['list-attention', '--sku', sku],
    ['disputes', '--sku', sku],
  ]) {
    const out = await supportCli(argv, down);
    t.is(out.code, 0, `${argv.join(' ')}: ${out.stdout}${out.stderr}`);
  }
  const find = await supportCli(['find', '--buyer', 'nobody'], down);
  t.is(find.code, 1, find.stderr);
  t.regex(find.stderr, /no purchase of buyer nobody/);
});

test('refund-oversold refunds exactly the orders sold beyond stock and gives their units back to the allowance', async (t) => {
  const sku = await sys.createProduct({ stock: 1, oversellAllowance: 1 });
  const first = (await confirmedPurchase(sys, 'cli-real', sku)).purchaseId;
  const second = (await confirmedPurchase(sys, 'cli-over', sku)).purchaseId;
  t.like(await sys.stock(sku), { sold: 2, oversold: 1, soldOut: true });

  const out = await supportCli(['refund-oversold', sku, '--reason', 'sold beyond stock; sorry']);
  t.is(out.code, 0, out.stderr);
  t.regex(out.stdout, /1 of 1 oversold order\(s\) of \S+ refunded/);
  t.is(await refundsOf(second), 1);
  t.is(await refundsOf(first), 0);
  t.like(await sys.stock(sku), { sold: 1, oversold: 0, available: 0 });
  const again = await supportCli(['refund-oversold', sku, '--reason', 'sold beyond stock; sorry']);
  t.is(again.code, 0);
  t.regex(again.stdout, /no orders of \S+ are flagged as oversold/);
  t.is(await refundsOf(second), 1);
  await assertInvariants(t, sys.db, sku);
});

async function auditOf(purchaseId: string, on: System = sys) {
  const { rows } = await on.db.query('SELECT actor, action, detail FROM audit_log WHERE purchase_id = $1 ORDER BY id', [
    purchaseId,
  ]);
  return rows;
}

test.serial(
  'retry tells the waiting saga to try the refused refund again: refused again is exit 1, after Stripe recovers it is refunded',
  async (t) => {
    const own = await refusingSystem(t);
    const { sku, purchaseId } = await refusedLateRefund(own, 'cli-attn-retry');

    // Twice while Stripe still refuses (each try also doubles the saga's own backoff, so it cannot
    // beat the next retry to the refund once Stripe recovers).
    for (let i = 0; i < 2; i++) {
      const again = await supportCli(['retry', purchaseId], {}, own);
      t.is(again.code, 1, again.stdout + again.stderr);
      t.true(again.stdout.includes(`told purchase-${purchaseId} to try again now`), again.stdout);
      t.regex(
        again.stderr,
        new RegExp(`purchase ${purchaseId}: Stripe refused again: .*${REFUSAL.replace(/\./g, '\\.')}`),
      );
    }
    t.is(await refundsOf(purchaseId, own), 0);

    await allowRefunds(own);
    const out = await supportCli(['retry', purchaseId], {}, own);
    t.is(out.code, 0, out.stderr);
    t.regex(out.stdout, new RegExp(`purchase ${purchaseId}: refunded, refund (succeeded|pending) \\(sold out`));
    const p = await own.waitForPurchase(purchaseId, (r) => r.status === 'refunded' && r.refund_status === 'succeeded');
    t.truthy(p.refund_id);
    t.is(await refundsOf(purchaseId, own), 1);
    const audit = (await auditOf(purchaseId, own)).filter((r) => r.action === 'support_retry');
    t.is(audit.length, 3);
    for (const r of audit) {
      t.regex(r.actor, /^support-cli:\S+$/);
      t.deepEqual(r.detail, { told: [`purchase-${purchaseId}`] });
    }

    // Nothing waits any more: a second word is refused, exit 1.
    const late = await supportCli(['retry', purchaseId], {}, own);
    t.is(late.code, 1);
    t.regex(late.stderr, new RegExp(`purchase ${purchaseId} is refunded, not needs_attention`));
    t.like((await own.api('GET', `/v1/products/${sku}`)).body, { sold: 1, available: 0 });
    await assertInvariants(t, own.db, sku);
  },
);

test.serial(
  'settle records a refund made by hand: the purchase ends refunded with the note, and Stripe refunds nothing',
  async (t) => {
    const own = await refusingSystem(t);
    const { sku, purchaseId } = await refusedLateRefund(own, 'cli-attn-settle');

    const out = await supportCli(['settle', purchaseId, '--note', 'refunded by bank transfer'], {}, own);
    t.is(out.code, 0, out.stderr);
    t.true(out.stdout.includes(`told purchase-${purchaseId} that it was settled by hand`), out.stdout);
    t.regex(
      out.stdout,
      new RegExp(
        `purchase ${purchaseId}: refunded, refund \\S+ \\(settled by hand by support-cli:\\S+: refunded by bank transfer\\)`,
      ),
    );
    const p = await own.waitForPurchase(purchaseId, (r) => r.status === 'refunded');
    t.regex(p.refund_reason, /^settled by hand by support-cli:\S+: refunded by bank transfer$/);
    const view = await own.purchase(purchaseId);
    t.is(view.body.status, 'refunded');

    // The saga stopped trying: even once Stripe would take it, no refund is made.
    await allowRefunds(own);
    await own.temporal.workflow.getHandle(`purchase-${purchaseId}`).result();
    t.is(await refundsOf(purchaseId, own), 0);
    const audit = (await auditOf(purchaseId, own)).filter((r) => r.action === 'settled_by_hand');
    t.is(audit.length, 1);
    t.deepEqual(audit[0].detail, { told: [`purchase-${purchaseId}`], note: 'refunded by bank transfer' });
    await assertInvariants(t, own.db, sku);
  },
);

test.serial('retry-stray and settle-stray reach the refund saga of a stray payment', async (t) => {
  const own = await refusingSystem(t);
  const first = await refusedStrayRefund(own, 'cli-attn-stray-1');
  const second = await refusedStrayRefund(own, 'cli-attn-stray-2');

  const settled = await supportCli(
    ['settle-stray', second.sessionId, '--note', 'refunded from the other app'],
    {},
    own,
  );
  t.is(settled.code, 0, settled.stderr);
  t.regex(
    settled.stdout,
    new RegExp(
      `stray payment ${second.sessionId}: settled_by_hand \\(settled by hand by support-cli:\\S+: refunded from the other app\\)`,
    ),
  );

  for (let i = 0; i < 2; i++) {
    const again = await supportCli(['retry-stray', first.sessionId], {}, own);
    t.is(again.code, 1, again.stdout + again.stderr);
    t.regex(again.stderr, new RegExp(`stray payment ${first.sessionId}: Stripe refused again: `));
  }
  await allowRefunds(own);
  const retried = await supportCli(['retry-stray', first.sessionId], {}, own);
  t.is(retried.code, 0, retried.stderr);
  t.regex(retried.stdout, new RegExp(`stray payment ${first.sessionId}: (refunded|refunding)`));

  // `refunding` until Stripe's answer (or the refund's webhook) says it went through.
  const statuses = await until('the stray refund to be refunded', async () => {
    const { rows } = await own.db.query(
      'SELECT session_id, status FROM stray_payments WHERE session_id = ANY($1) ORDER BY session_id',
      [[first.sessionId, second.sessionId]],
    );
    const byId = Object.fromEntries(rows.map((r) => [r.session_id as string, r.status as string]));
    return byId[first.sessionId] === 'refunding' ? undefined : byId;
  });
  t.deepEqual(statuses, {
    [first.sessionId]: 'refunded',
    [second.sessionId]: 'settled_by_hand',
  });
  t.is(await refundsOf(second.purchaseId, own), 0, 'settled by hand: no refund of the stray money');
  t.is(await refundsOf(first.purchaseId, own), 1);
  // The saga writes its audit row just after the record says refunded: wait for it.
  let actions: string[] = [];
  for (let tries = 0; tries < 100; tries++) {
    actions = (await auditOf(first.purchaseId, own)).map((r) => r.action as string);
    if (actions.includes('stray_payment_refunded')) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  t.deepEqual(actions.filter((a) => a.startsWith('stray_')).sort(), [
    'stray_payment_refunded',
    'stray_support_retry',
    'stray_support_retry',
    'stray_support_retry',
  ]);
  for (const [p, buyer] of [
    [first, 'cli-attn-stray-1'],
    [second, 'cli-attn-stray-2'],
  ] as const) {
    t.is((await own.api('POST', `/v1/purchases/${p.purchaseId}/cancel`, undefined, await asBuyer(buyer))).status, 200);
  }
});

// Each refusal is a path of its own through the records (settle-stray reaches the same one as
// retry-stray: the parser makes both the same stray command, test/fast/ops/support-args.test.ts).
// The runs, and the refund that failed after its saga ended, are made at once.
test('retry and settle refuse, with exit 1, what does not wait for support: unknown, not needs_attention', async (t) => {
  const sku = await sys.createProduct();
  const [paid, orphan] = await Promise.all([
    confirmedPurchase(sys, 'cli-attn-none', sku).then((p) => p.purchaseId),
    // A refund that failed after its saga ended is listed (retry and settle make a new saga for it:
    // test/ops/support-attention.test.ts).
    refundFailedAfterSagaEnded(sys, 'cli-attn-orphan'),
  ]);
  const refusals: [string[], RegExp][] = [
    [['retry', 'no-such-purchase'], /no purchase no-such-purchase/],
    [['settle', paid, '--note', 'x'], new RegExp(`purchase ${paid} is confirmed, not needs_attention`)],
    [['retry-stray', 'cs_test_unknown'], /no stray payment on session cs_test_unknown/],
  ];
  const [listed, none, ...refused] = await inBatches(
    [['list-attention', '--sku', orphan.sku], ['list-attention', '--sku', sku], ...refusals.map(([args]) => args)],
    5,
    (args) => supportCli(args),
  );
  refusals.forEach(([args, message], i) => {
    t.is(refused[i].code, 1, `${args.join(' ')}: ${refused[i].stderr}`);
    t.regex(refused[i].stderr, message);
  });

  t.is(listed.code, 0, listed.stderr);
  t.regex(listed.stdout, /^purchases in needs_attention: 1$/m);
  t.regex(
    listed.stdout,
    new RegExp(
      `^  ${orphan.purchaseId}  ${orphan.sku}  cli-attn-orphan  since \\S+  the refund failed after its saga ended: expired_or_canceled_card`,
      'm',
    ),
  );
  t.regex(listed.stdout, /^stray payments in needs_attention: 0$/m);
  t.is(none.code, 0);
  t.regex(none.stdout, new RegExp(`^nothing needs attention for ${sku}`));
});

// Settled by hand after a refused refund: the record says it was settled by hand, not the refused attempt.
test.serial('a purchase settled by hand shows its refund settled by hand, not the refused attempt', async (t) => {
  const own = await refusingSystem(t);
  const { purchaseId } = await refusedLateRefund(own, 'cli-attn-settle-status');
  const out = await supportCli(['settle', purchaseId, '--note', 'refunded by bank transfer'], {}, own);
  t.is(out.code, 0, out.stderr);
  const p = await own.waitForPurchase(purchaseId, (r) => r.status === 'refunded');
  t.is(p.refund_status, 'settled');
  t.like((await own.purchase(purchaseId)).body, {
    status: 'refunded',
    refund: { status: 'succeeded', settledByHand: true },
  });
});
