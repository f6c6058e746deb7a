import test from 'ava';
import { confirmedPurchase, runOpsCli } from '../helpers/attention';
import { until } from '../helpers/poll';
import { AS_SUPPORT, startSystem, type System } from '../helpers/system';

// A support refund's reason is the buyer's message, word for word; what support notes for itself
// (`note`) stays in the audit trail and reaches neither the buyer nor Stripe.

let sys: System;
test.before(async () => {
  sys = await startSystem();
});
test.after.always(async () => {
  await sys?.close();
});

/** What the buyer is told, and what the audit trail says was asked, once the refund saga wrote both. */
async function toldAndAudited(purchaseId: string): Promise<{ message: string; requested: Record<string, unknown> }> {
  return until(`the refund of ${purchaseId} to be told and audited`, async () => {
    const told = await sys.db.query(
      "SELECT message FROM notifications WHERE purchase_id = $1 AND kind = 'refunded_by_support'",
      [purchaseId],
    );
    const audit = await sys.db.query(
      "SELECT detail FROM audit_log WHERE purchase_id = $1 AND action = 'refund_requested'",
      [purchaseId],
    );
    return told.rows[0] && audit.rows[0]
      ? { message: told.rows[0].message, requested: audit.rows[0].detail }
      : undefined;
  });
}

/** The metadata of the refunds Stripe (the emulator) made for the purchase, as sent. */
async function refundMetadata(purchaseId: string): Promise<string> {
  const { body } = await sys.emulatorCall('GET', '/_emulator/events?type=refund.created');
  const events = body.data as { event: { data: { object: { metadata?: Record<string, string> } } } }[];
  return JSON.stringify(events.filter((e) => e.event.data.object.metadata?.purchase_id === purchaseId));
}

test('a support refund over HTTP keeps its internal note apart from the buyer message', async (t) => {
  const { purchaseId } = await confirmedPurchase(sys, 'note-http');
  const res = await sys.api(
    'POST',
    `/v1/support/purchases/${purchaseId}/refund`,
    { reason: 'We shipped the wrong size, sorry.', restock: false, note: 'buyer shouted on the phone; ticket 4711' },
    AS_SUPPORT,
  );
  t.is(res.status, 202, JSON.stringify(res.body));
  t.is(res.body.refund.reason, 'We shipped the wrong size, sorry.');
  const { message, requested } = await toldAndAudited(purchaseId);
  t.is(message, 'Your order was refunded: We shipped the wrong size, sorry.');
  t.like(requested, { reason: 'We shipped the wrong size, sorry.', note: 'buyer shouted on the phone; ticket 4711' });
  t.false((await refundMetadata(purchaseId)).includes('ticket 4711'), 'the note is not sent to Stripe');
  t.false(JSON.stringify((await sys.purchase(purchaseId)).body).includes('ticket 4711'));
});

test('a support refund from the CLI takes --note, kept internal', async (t) => {
  const { purchaseId } = await confirmedPurchase(sys, 'note-cli');
  const out = await runOpsCli(
    'support',
    ['refund', purchaseId, '--reason', 'Out of stock after all.', '--note', 'warehouse miscount'],
    { TASK_QUEUE: sys.taskQueue },
  );
  t.is(out.code, 0, out.stderr);
  const { message, requested } = await toldAndAudited(purchaseId);
  t.is(message, 'Your order was refunded: Out of stock after all.');
  t.like(requested, { note: 'warehouse miscount' });
});

test('a note that is not text, or too long, is 400 naming note, and nothing is refunded', async (t) => {
  const { purchaseId } = await confirmedPurchase(sys, 'note-bad');
  for (const note of [42, 'x'.repeat(501), '   ']) {
    const res = await sys.api(
      'POST',
      `/v1/support/purchases/${purchaseId}/refund`,
      { reason: 'sorry', restock: false, note },
      AS_SUPPORT,
    );
    t.is(res.status, 400, JSON.stringify(note));
    t.is(res.body.type, 'invalid-request');
    t.true(
      (res.body.errors as { field: string }[]).some((e) => e.field === 'note'),
      JSON.stringify(res.body),
    );
  }
  t.like((await sys.purchase(purchaseId)).body, { status: 'confirmed' });
});
