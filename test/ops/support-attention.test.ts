import test, { type ExecutionContext } from 'ava';
import { createStripe } from '../../config/clients';
import { findStuckSagas, stuckSagaFilters } from '../../ops/stuck-sagas';
import { BuyerIdKey, PurchaseStatusKey, SkuKey } from '../../workflows/definitions';
import {
  allowRefunds,
  confirmedPurchase,
  refuseRefunds,
  foreignSession,
  runOpsCli,
  supportRefundFailedAfterSagaEnded,
} from '../helpers/attention';
import { assertInvariants } from '../helpers/db';
import { postEvent, stripeEvent } from '../helpers/webhooks';
import { until } from '../helpers/poll';
import { AS_SUPPORT, startSystem, type System } from '../helpers/system';

// Money that waits for support after its saga ended: a refund that failed once the refund saga had
// closed. Each test has a system of its own (its own database, so the needs-attention count is its
// own, and its own emulator, so refusing refunds touches no other test); they run one at a time.

async function ownSystem(t: ExecutionContext): Promise<System> {
  // The needs-attention gauge counted again at each scrape a quarter second apart, not every 15 s.
  const own = await startSystem({ ownDatabase: true, statusCountMaxAgeMs: 250 });
  t.teardown(() => own.close());
  return own;
}

function supportCli(on: System, args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return runOpsCli('support', args, { TASK_QUEUE: on.taskQueue, DATABASE_URL: on.databaseUrl });
}

/** The refunds Stripe (the emulator) holds for the purchase's payment, as stripe-node lists them. */
async function refundsAtStripe(on: System, purchaseId: string): Promise<{ status: string; amount: number }[]> {
  const { rows } = await on.db.query('SELECT payment_intent_id FROM purchases WHERE purchase_id = $1', [purchaseId]);
  const stripe = createStripe({ stripeSecretKey: 'sk_test_emulator', stripeApiUrl: on.emulator.url });
  const list = await stripe.refunds.list({ payment_intent: rows[0].payment_intent_id });
  return list.data.map((r) => ({ status: r.status ?? '', amount: r.amount }));
}

/** `flashsale_purchases{status="needs_attention"}` as the API serves it (counted at most every 250 ms here), once it is `n`. */
async function needsAttentionMetric(on: System, n: number): Promise<number> {
  return until(
    `flashsale_purchases{status="needs_attention"} to be ${n}`,
    async () => {
      const text = (await on.api('GET', '/metrics')).body as string;
      const m = /^flashsale_purchases\{status="needs_attention"\} (\d+)$/m.exec(text);
      const value = m ? Number(m[1]) : 0;
      return value === n ? value : undefined;
    },
    45_000,
    500,
  );
}

async function auditActions(on: System, purchaseId: string): Promise<string[]> {
  const { rows } = await on.db.query('SELECT action FROM audit_log WHERE purchase_id = $1 ORDER BY id', [purchaseId]);
  return rows.map((r) => r.action as string);
}

test.serial(
  'a refund that failed after its saga ended is refunded again by refund or retry: refused is exit 1, accepted is one new refund',
  async (t) => {
    const own = await ownSystem(t);
    const { sku, purchaseId } = await supportRefundFailedAfterSagaEnded(own, 'attn-ended-retry');
    await needsAttentionMetric(own, 1);

    await refuseRefunds(own);
    const refused = await supportCli(own, ['refund', purchaseId, '--reason', 'wrong size shipped']);
    t.is(refused.code, 1, refused.stdout + refused.stderr);
    t.regex(refused.stderr, /Injected fault: HTTP 400/);
    const again = await supportCli(own, ['retry', purchaseId]);
    t.is(again.code, 1, again.stdout + again.stderr);
    t.true(again.stdout.includes(`told refund-${purchaseId} to try again now`), again.stdout);
    t.regex(again.stderr, new RegExp(`purchase ${purchaseId}: Stripe refused again: .*Injected fault: HTTP 400`));
    t.like(await own.waitForPurchase(purchaseId, () => true), { status: 'needs_attention' });

    await allowRefunds(own);
    const out = await supportCli(own, ['retry', purchaseId]);
    t.is(out.code, 0, out.stderr);
    t.regex(
      out.stdout,
      new RegExp(`purchase ${purchaseId}: refunded, refund (succeeded|pending) \\(wrong size shipped\\)`),
    );
    const p = await own.waitForPurchase(purchaseId, (r) => r.status === 'refunded' && r.refund_status === 'succeeded');
    await own.temporal.workflow.getHandle(`refund-${purchaseId}`).result();

    // Asked again, and once more over the route: nothing waits, and Stripe refunds nothing more.
    const late = await supportCli(own, ['retry', purchaseId]);
    t.is(late.code, 1);
    t.regex(late.stderr, new RegExp(`purchase ${purchaseId} is refunded, not needs_attention`));
    t.is((await supportCli(own, ['refund', purchaseId, '--reason', 'again'])).code, 0);
    const refunds = await refundsAtStripe(own, purchaseId);
    t.deepEqual(refunds.map((r) => r.status).sort(), ['failed', 'succeeded'], 'the failed one and one new refund');
    t.is(refunds.find((r) => r.status === 'succeeded')!.amount, Number(p.amount_cents));
    t.true((await auditActions(own, purchaseId)).includes('support_retry'));
    await needsAttentionMetric(own, 0);
    await assertInvariants(t, own.db, sku);
  },
);

test.serial(
  'a refund that failed after its saga ended can be settled by hand: the purchase ends refunded with the note, and Stripe refunds nothing',
  async (t) => {
    const own = await ownSystem(t);
    const { sku, purchaseId } = await supportRefundFailedAfterSagaEnded(own, 'attn-ended-settle');

    const out = await supportCli(own, ['settle', purchaseId, '--note', 'refunded by bank transfer']);
    t.is(out.code, 0, out.stderr);
    t.true(out.stdout.includes(`told refund-${purchaseId} that it was settled by hand`), out.stdout);
    t.regex(out.stdout, /settled by hand by support-cli:\S+: refunded by bank transfer/);
    const p = await own.waitForPurchase(purchaseId, (r) => r.status === 'refunded');
    t.regex(p.refund_reason, /^settled by hand by support-cli:\S+: refunded by bank transfer$/);
    t.is(p.refund_status, 'settled');
    await own.temporal.workflow.getHandle(`refund-${purchaseId}`).result();
    t.deepEqual(
      (await refundsAtStripe(own, purchaseId)).map((r) => r.status),
      ['failed'],
    );
    t.true((await auditActions(own, purchaseId)).includes('settled_by_hand'));
    await needsAttentionMetric(own, 0);
    await assertInvariants(t, own.db, sku);
  },
);

test.serial(
  'a support refund Stripe refuses is answered 409 saying it failed, needs attention and is retried, not that the purchase cannot be refunded',
  async (t) => {
    const own = await ownSystem(t);
    const { purchaseId } = await confirmedPurchase(own, 'attn-refused-wording');
    await refuseRefunds(own);
    const path = `/v1/support/purchases/${purchaseId}/refund`;
    for (let i = 0; i < 2; i++) {
      const refused = await own.api('POST', path, { reason: 'wrong size', restock: false }, AS_SUPPORT);
      t.is(refused.status, 409, JSON.stringify(refused.body));
      t.like(refused.body, {
        type: 'not-refundable',
        purchaseStatus: 'needs_attention',
        refund: { status: 'failed', reason: 'wrong size' },
      });
      t.notRegex(`${refused.body.title} ${refused.body.detail}`, /cannot be refunded|not refundable/i);
      t.regex(refused.body.detail, /^the refund failed and is being retried \(Stripe: .*Injected fault: HTTP 400/);
      t.regex(refused.body.detail, /needs attention/);
      t.regex(refused.body.detail, new RegExp(`settle ${purchaseId} --note`));
    }
    const cli = await supportCli(own, ['refund', purchaseId, '--reason', 'wrong size']);
    t.is(cli.code, 1);
    t.regex(cli.stderr, new RegExp(`^support: ${purchaseId}: the refund failed and is being retried`));
    await allowRefunds(own);
    const ok = await own.api('POST', path, { reason: 'wrong size', restock: false }, AS_SUPPORT);
    t.is(ok.status, 202, JSON.stringify(ok.body));
  },
);

test.serial(
  'a support refund settled by hand records the refund as settled, not succeeded, on the record, the CLI and the routes',
  async (t) => {
    const own = await ownSystem(t);
    const { purchaseId } = await confirmedPurchase(own, 'attn-settled-outcome');
    await refuseRefunds(own);
    const path = `/v1/support/purchases/${purchaseId}/refund`;
    t.is((await own.api('POST', path, { reason: 'wrong size', restock: false }, AS_SUPPORT)).status, 409);

    const out = await supportCli(own, ['settle', purchaseId, '--note', 'refunded by bank transfer']);
    t.is(out.code, 0, out.stderr);
    t.regex(
      out.stdout,
      new RegExp(
        `purchase ${purchaseId}: refunded, refund settled \\(settled by hand by support-cli:\\S+: refunded by bank transfer\\)`,
      ),
    );
    await own.temporal.workflow.getHandle(`refund-${purchaseId}`).result();
    const p = await own.waitForPurchase(purchaseId, (r) => r.status === 'refunded');
    t.is(p.refund_status, 'settled');
    t.like((await own.purchase(purchaseId)).body, {
      status: 'refunded',
      refund: { status: 'succeeded', settledByHand: true },
    });
    const again = await own.api('POST', path, { reason: 'wrong size', restock: false }, AS_SUPPORT);
    t.is(again.status, 202);
    t.like(again.body, { refund: { status: 'succeeded', settledByHand: true } });
    await allowRefunds(own);
    t.deepEqual(await refundsAtStripe(own, purchaseId), []);
  },
);

test.serial(
  'a second refund asking to restock says whether the unit went back on sale, and refuses clearly when it cannot',
  async (t) => {
    const own = await ownSystem(t);
    const plain = await confirmedPurchase(own, 'attn-restock-later');
    t.is((await supportCli(own, ['refund', plain.purchaseId, '--reason', 'wrong size'])).code, 0);
    await own.waitForPurchase(plain.purchaseId, (r) => r.refund_status === 'succeeded');
    await own.temporal.workflow.getHandle(`refund-${plain.purchaseId}`).result();

    const cli = await supportCli(own, ['refund', plain.purchaseId, '--reason', 'wrong size', '--restock']);
    t.is(cli.code, 1, cli.stdout);
    t.regex(cli.stderr, /already refunded \(refund succeeded\) without restock: its unit was not put back on sale/);
    const http = await own.api(
      'POST',
      `/v1/support/purchases/${plain.purchaseId}/refund`,
      { reason: 'wrong size', restock: true },
      AS_SUPPORT,
    );
    t.is(http.status, 409);
    t.regex(http.body.detail, /already refunded .* its unit was not put back on sale; nothing was changed/);
    t.like(await own.stock(plain.sku), { available: 4, sold: 1 });

    const restocked = await confirmedPurchase(own, 'attn-restock-twice');
    const first = await supportCli(own, ['refund', restocked.purchaseId, '--reason', 'damaged', '--restock']);
    t.is(first.code, 0, first.stderr);
    const again = await supportCli(own, ['refund', restocked.purchaseId, '--reason', 'damaged', '--restock']);
    t.is(again.code, 0, again.stderr);
    t.regex(again.stdout, /refund succeeded, unit back on sale/);
    t.like(await own.stock(restocked.sku), { available: 5, sold: 0 });
    await assertInvariants(t, own.db, plain.sku);
    await assertInvariants(t, own.db, restocked.sku);
  },
);

test.serial(
  'a support refund Stripe refuses carries the purchase search attributes: the needs-attention filter and the stuck finder see it from Temporal alone',
  async (t) => {
    const own = await ownSystem(t);
    const { sku, purchaseId } = await confirmedPurchase(own, 'attn-search');
    await refuseRefunds(own);
    const path = `/v1/support/purchases/${purchaseId}/refund`;
    t.is((await own.api('POST', path, { reason: 'wrong size', restock: false }, AS_SUPPORT)).status, 409);

    const workflowId = `refund-${purchaseId}`;
    const filter = stuckSagaFilters(new Date(), { sku }).needsAttention;
    await until(`${filter} to find ${workflowId}`, async () => {
      const listed = [];
      for await (const w of own.temporal.workflow.list({ query: filter })) listed.push(w.workflowId);
      return listed.includes(workflowId) ? true : undefined;
    });
    const attrs = (await own.temporal.workflow.getHandle(workflowId).describe()).typedSearchAttributes;
    t.is(attrs.get(PurchaseStatusKey), 'needs_attention');
    t.is(attrs.get(SkuKey), sku);
    t.is(attrs.get(BuyerIdKey), 'attn-search');
    const found = await findStuckSagas(own.temporal, { olderThanMs: 24 * 3600_000, sku });
    t.like(
      found.find((s) => s.workflowId === workflowId),
      { purchaseId, status: 'needs_attention', sku, buyerId: 'attn-search', kinds: ['needs_attention'] },
      JSON.stringify(found),
    );

    await allowRefunds(own);
    t.is((await own.api('POST', path, { reason: 'wrong size', restock: false }, AS_SUPPORT)).status, 202);
    await own.temporal.workflow.getHandle(workflowId).result();
    const after = (await own.temporal.workflow.getHandle(workflowId).describe()).typedSearchAttributes;
    t.is(after.get(PurchaseStatusKey), 'refunded');
  },
);

test.serial(
  'a late failure of a refund settled by hand does not reopen the purchase, and support refunds nothing more',
  async (t) => {
    const own = await ownSystem(t);
    const stripe = createStripe({ stripeSecretKey: 'sk_test_emulator', stripeApiUrl: own.emulator.url });
    const { sku, purchaseId, refundId } = await supportRefundFailedAfterSagaEnded(own, 'attn-late-news');
    const settled = await supportCli(own, ['settle', purchaseId, '--note', 'refunded by bank transfer']);
    t.is(settled.code, 0, settled.stderr);
    await own.waitForPurchase(purchaseId, (r) => r.status === 'refunded' && r.refund_status === 'settled');
    await own.temporal.workflow.getHandle(`refund-${purchaseId}`).result();
    // Stripe tells of the failure once more (refund.updated beside refund.failed, or a redelivery).
    const failed = await stripe.refunds.retrieve(refundId);
    t.is(failed.status, 'failed');
    const news = await postEvent(own, stripeEvent('refund.updated', failed as unknown as Record<string, unknown>));
    t.is(news.status, 200, JSON.stringify(news.body));
    t.like(await own.waitForPurchase(purchaseId, () => true), { status: 'refunded', refund_status: 'settled' });
    // Had that refund gone through after all, the buyer might have been refunded twice: the record
    // keeps the settlement, and the audit trail tells support.
    const through = stripeEvent('refund.updated', {
      ...(failed as unknown as Record<string, unknown>),
      status: 'succeeded',
    });
    t.is((await postEvent(own, through)).status, 200);
    t.like(await own.waitForPurchase(purchaseId, () => true), { status: 'refunded', refund_status: 'settled' });
    t.true((await auditActions(own, purchaseId)).includes('refund_succeeded_after_settlement'));
    const retry = await supportCli(own, ['retry', purchaseId]);
    t.is(retry.code, 1, retry.stdout + retry.stderr);
    t.deepEqual(
      (await refundsAtStripe(own, purchaseId)).map((r) => r.status),
      ['failed'],
      'the buyer was refunded by hand: Stripe refunds nothing',
    );
    await needsAttentionMetric(own, 0);
    await assertInvariants(t, own.db, sku);
  },
);

test.serial(
  "a failed refund of another payment that names one of our purchases in its metadata leaves that purchase alone: support's retry refunds nothing",
  async (t) => {
    const own = await ownSystem(t);
    const { sku, purchaseId } = await confirmedPurchase(own, 'attn-foreign-refund');
    const p = await own.waitForPurchase(purchaseId, () => true);
    const forged = stripeEvent('refund.failed', {
      id: 're_another_payment',
      object: 'refund',
      amount: Number(p.amount_cents),
      currency: p.currency,
      status: 'failed',
      failure_reason: 'expired_or_canceled_card',
      payment_intent: 'pi_another_payment',
      metadata: { purchase_id: purchaseId, refund_step: 'support' },
    });
    t.is((await postEvent(own, forged)).status, 200);
    t.like(await own.waitForPurchase(purchaseId, () => true), { status: 'confirmed', refund_status: null });
    const retry = await supportCli(own, ['retry', purchaseId]);
    t.is(retry.code, 1, retry.stdout + retry.stderr);
    t.deepEqual(await refundsAtStripe(own, purchaseId), []);
    await assertInvariants(t, own.db, sku);
  },
);

test.serial(
  'a stray payment whose refund fails after its saga ended is back in front of support, who settle it by hand',
  async (t) => {
    const sys = await ownSystem(t);
    const sku = await sys.createProduct();
    const res = await sys.buy(sku, 'cli-stray-late');
    t.is(res.status, 201, JSON.stringify(res.body));
    const foreign = await foreignSession(sys, res.body.purchaseId);
    t.is((await sys.pay(foreign.id, 'succeeded')).status, 200);
    // The stray payment is refunded and its saga ends.
    const row = async () =>
      (await sys.db.query('SELECT status, refund_id, detail FROM stray_payments WHERE session_id = $1', [foreign.id]))
        .rows[0];
    const refunded = await until('the stray payment refunded', async () =>
      (await row())?.status === 'refunded' ? row() : undefined,
    );
    await sys.temporal.workflow.getHandle(`stray-${foreign.id}`).result();

    // Days later the bank returns it: the refund fails, and no saga is there to hear it.
    const failed = await sys.emulatorCall('POST', `/_emulator/refunds/${refunded.refund_id}/fail`, {});
    t.is(failed.status, 200, JSON.stringify(failed.body));
    const attention = await until('the stray payment in needs_attention', async () => {
      const r = await row();
      return r.status === 'needs_attention' ? r : undefined;
    });
    t.regex(attention.detail, /the refund failed after its saga ended/);
    const listed = await supportCli(sys, ['list-attention']);
    t.regex(listed.stdout, new RegExp(`${foreign.id} .*the refund failed after its saga ended`));

    // No saga waits: a retry says what to do instead, and changes nothing; settled by hand is written.
    const retry = await supportCli(sys, ['retry-stray', foreign.id]);
    t.is(retry.code, 1, retry.stdout);
    t.regex(
      retry.stderr,
      /has ended: no refund of this payment is made again from here.*Stripe Dashboard.*settle-stray/,
    );
    t.like(await row(), { status: 'needs_attention' });
    const settled = await supportCli(sys, ['settle-stray', foreign.id, '--note', 'paid back by bank transfer']);
    t.is(settled.code, 0, settled.stderr);
    t.regex(settled.stdout, /settled_by_hand \(settled by hand by support-cli:\S+: paid back by bank transfer\)/);
    t.like(await row(), { status: 'settled_by_hand' });
    const { rows } = await sys.db.query(
      `SELECT detail FROM audit_log WHERE purchase_id = $1 AND action = 'stray_settled_by_hand'`,
      [res.body.purchaseId],
    );
    t.like(rows[0]?.detail, { sessionId: foreign.id, note: 'paid back by bank transfer' });
  },
);
