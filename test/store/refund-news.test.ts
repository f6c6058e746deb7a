import { randomUUID } from 'node:crypto';
import test from 'ava';
import { openPurchase } from '../../store/open-purchase';
import { recordRefundNews } from '../../store/payments';
import { getPurchase, purchaseIdFor, recordPurchase } from '../../store/purchases';
import { testDb, uniqueSku } from '../helpers/db';

// A refund's news reaches the record from two writers: the webhook (each event of the refund) and the
// saga that made it (its own steps). A saga follows its refund only until it succeeds: news it writes
// after the refund's failure is on the record is older than that failure, and must not say refunded.

const db = testDb(2);
test.after.always(() => db.end());

const reason = 'wrong colour';

/** A purchase whose refund `re_1` is on the record as the saga's first step wrote it (pending). */
async function refunding(): Promise<string> {
  const key = randomUUID();
  await openPurchase(db, key, { sku: uniqueSku('refund-news'), buyerId: 'uma', quantity: 1 });
  const id = purchaseIdFor(key, 'uma');
  await recordPurchase(db, id, { status: 'refunded', reason, refund: { status: 'pending', reason, refundId: 're_1' } });
  return id;
}

test('a saga’s write of its refund’s success over the failure on the record puts the purchase in front of support', async (t) => {
  const id = await refunding();
  // The saga read the refund from Stripe (succeeded) and went on; the webhook then told its failure.
  t.true(
    await recordRefundNews(db, id, { refundId: 're_1', status: 'failed', failureReason: 'expired_or_canceled_card' }),
  );
  await recordPurchase(db, id, {
    status: 'refunded',
    reason,
    refund: { status: 'succeeded', reason, refundId: 're_1' },
  });
  const after = await getPurchase(db, id);
  t.is(after?.status, 'needs_attention');
  t.is(after?.reason, 'the refund failed after it succeeded: expired_or_canceled_card');
  t.like(after?.refund, { status: 'failed', refundId: 're_1', failureReason: 'expired_or_canceled_card' });
  // Its last word again (a retried activity) changes nothing more, and keeps why.
  await recordPurchase(db, id, {
    status: 'refunded',
    reason,
    refund: { status: 'succeeded', reason, refundId: 're_1' },
  });
  t.like(await getPurchase(db, id), { status: 'needs_attention', reason: after?.reason });
});

test('news that moves the refund on is written: its own failure, the refund made again, a settlement by hand', async (t) => {
  const id = await refunding();
  // The saga still following it records the failure itself, with its own words.
  await recordPurchase(db, id, {
    status: 'needs_attention',
    reason: `support refund: the refund failed`,
    refund: { status: 'failed', reason, refundId: 're_1', failureReason: 'lost_or_stolen_card' },
  });
  t.like(await getPurchase(db, id), { status: 'needs_attention', reason: 'support refund: the refund failed' });
  // Made again (a new refund): refunded.
  await recordPurchase(db, id, {
    status: 'refunded',
    reason,
    refund: { status: 'succeeded', reason, refundId: 're_2' },
  });
  t.like(await getPurchase(db, id), { status: 'refunded', reason, refund: { status: 'succeeded', refundId: 're_2' } });

  const other = await refunding();
  await recordRefundNews(db, other, { refundId: 're_1', status: 'failed', failureReason: 'unknown' });
  // Settled by hand (no refund id): support's word stands.
  await recordPurchase(db, other, {
    status: 'refunded',
    reason,
    refund: { status: 'settled', reason: 'paid back by bank transfer' },
  });
  t.like(await getPurchase(db, other), { status: 'refunded', reason, refund: { status: 'settled' } });
});
