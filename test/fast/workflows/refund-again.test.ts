import test from 'ava';
import type { RefundInput } from '../../../activities/stripe';
import type { PurchaseState, RefundAgainInput, RefundSummary, SupportAction } from '../../../vocabulary';
import { refundAgainWorkflow } from '../../../workflows';
import { refundEventSignal, supportActionSignal } from '../../../workflows/definitions';
import { useFastTemporal } from '../helpers/temporal';
import { idle, until } from '../helpers/wait';
import type { Case } from '../helpers/world';

// A refund that failed after its saga ended, made again on support's word (the word starts the run,
// as the API's signal-with-start does): a new refund whose key names the failed one, followed to its
// end; or settled by hand. Nothing goes on sale; the buyer hears of the refund once it is made, by
// Stripe or by hand.

const temporal = useFastTemporal(test);

const FAILED: RefundSummary = { status: 'failed', reason: 'wrong size', failureReason: 'expired_or_canceled_card' };

function needsAttention(c: Case, patch: Partial<PurchaseState> = {}): PurchaseState {
  const base = {
    purchaseId: c.id,
    sku: 'hoodie',
    buyerId: `b-${c.id}`,
    quantity: 1,
    status: 'needs_attention' as const,
  };
  return { ...base, paymentIntentId: c.paymentIntentId, refund: { ...FAILED, refundId: `re_old_${c.id}` }, ...patch };
}

/** Support's word for the purchase, starting the run (as POST /v1/support/.../refund does). */
function again(c: Case, word: SupportAction = { action: 'retry', actor: 'ana' }) {
  const { env, taskQueue } = temporal();
  const args: [RefundAgainInput] = [{ purchaseId: c.id, actor: 'ana' }];
  return env.client.workflow.signalWithStart(refundAgainWorkflow, {
    taskQueue,
    workflowId: `refund-${c.id}`,
    args,
    signal: supportActionSignal,
    signalArgs: [word],
  });
}

const refundsMade = (c: Case) => c.calls.filter((x) => x.name === 'refundPayment').map((x) => x.args[0] as RefundInput);

test('a purchase with no failed refund on record has nothing to make again, and nothing is called', async (t) => {
  const { world } = temporal();
  const records: Array<[(c: Case) => PurchaseState | null, string]> = [
    [() => null, 'the purchase does not exist'],
    [(c) => needsAttention(c, { status: 'confirmed', refund: undefined }), 'the purchase is confirmed, refund none'],
    [(c) => needsAttention(c, { refund: undefined }), 'the purchase is needs_attention, refund none'],
    [
      (c) => needsAttention(c, { refund: { ...FAILED, status: 'pending' } }),
      'the purchase is needs_attention, refund pending',
    ],
    [(c) => needsAttention(c, { paymentIntentId: undefined }), 'the purchase is needs_attention, refund failed'],
  ];
  for (const [record, now] of records) {
    const c = world.open();
    c.record = record(c);
    const result = await (await again(c)).result();
    t.deepEqual(result, {
      purchaseId: c.id,
      outcome: 'not_refundable',
      detail: `${now}: no failed refund to make again`,
    });
    t.deepEqual(c.names(), ['loadPurchase']);
  }
});

test('a refund that failed after its saga ended is made again on support’s retry: the key names the failed refund, it succeeds, the buyer is told', async (t) => {
  const c = temporal().world.open();
  c.record = needsAttention(c);
  const result = await (await again(c)).result();
  const summary = { status: 'succeeded', reason: 'wrong size', refundId: `re_${c.id}_1` };
  t.deepEqual(result, { purchaseId: c.id, outcome: 'refunded', refund: summary });
  t.like(c.record, { status: 'refunded', reason: 'wrong size', refund: summary });
  t.deepEqual(refundsMade(c), [
    {
      purchaseId: c.id,
      paymentIntentId: c.paymentIntentId,
      reason: 'wrong size',
      step: 'support',
      replaces: `re_old_${c.id}`,
      attempt: 0,
    },
  ]);
  t.deepEqual(c.names(), [
    'loadPurchase',
    'refundPayment',
    'recordPurchase',
    'getRefund',
    'recordPurchase',
    'appendAudit',
    'notifyBuyer',
  ]);
  t.like(c.calls[5].args[3], { refundId: `re_${c.id}_1`, replaces: `re_old_${c.id}` });
  t.deepEqual(c.audit, ['refunded']);
  t.deepEqual(c.notified, ['refunded_again']);
});

test('a refused refund with no id on record is made again as "unknown"; that one fails too, support retries (attempt 1), then settles by hand: the buyer is told', async (t) => {
  const c = temporal().world.open();
  c.record = needsAttention(c, { refund: FAILED });
  const h = await again(c);
  await h.signal(refundEventSignal, {
    refundId: `re_${c.id}_1`,
    status: 'failed',
    failureReason: 'lost_or_stolen_card',
  });
  await until(
    () => c.record?.refund?.refundId === `re_${c.id}_1` && c.record.status === 'needs_attention',
    'the failure',
  );
  t.like(c.record, { reason: 'support refund: the refund failed: lost_or_stolen_card' });
  await idle(h, 'the saga waiting for support');
  await h.signal(refundEventSignal, {
    refundId: `re_${c.id}_2`,
    status: 'failed',
    failureReason: 'lost_or_stolen_card',
  });
  await h.signal(supportActionSignal, { action: 'retry', actor: 'ana' });
  await until(
    () => c.record?.refund?.refundId === `re_${c.id}_2` && c.record.status === 'needs_attention',
    'a second failure',
  );
  await h.signal(supportActionSignal, { action: 'settled', actor: 'ana', note: 'paid back by bank transfer' });
  const result = await h.result();
  const summary = { status: 'settled', reason: 'settled by hand by ana: paid back by bank transfer' };
  t.deepEqual(result, { purchaseId: c.id, outcome: 'refunded', refund: summary });
  t.like(c.record, { status: 'refunded', refund: summary });
  t.deepEqual(
    refundsMade(c).map((r) => [r.replaces, r.attempt]),
    [
      ['unknown', 0],
      ['unknown', 1],
    ],
  );
  t.deepEqual(c.audit, ['refund_failed', 'refund_failed', 'refunded']);
  t.is(c.count('restockSale'), 0);
  t.deepEqual(c.notified, ['refunded_again']);
});

test('support’s first word settling by hand ends the run at once: no refund made, the purchase refunded as settled, the buyer told', async (t) => {
  const c = temporal().world.open();
  c.record = needsAttention(c);
  const result = await (
    await again(c, { action: 'settled', actor: 'ana', note: 'refunded in the Dashboard' })
  ).result();
  t.like(result, {
    outcome: 'refunded',
    refund: { status: 'settled', reason: 'settled by hand by ana: refunded in the Dashboard' },
  });
  t.deepEqual(c.names(), ['loadPurchase', 'recordPurchase', 'appendAudit', 'notifyBuyer']);
  t.deepEqual(c.notified, ['refunded_again']);
});
