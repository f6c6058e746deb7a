import { randomUUID } from 'node:crypto';
import test, { type ExecutionContext } from 'ava';
import pg from 'pg';
import { NotAdmittedError, openPurchase } from '../../store/open-purchase';
import { purchaseIdFor } from '../../store/purchases';
import { roomProduct, testDb, uniqueSku } from '../helpers/db';
import { until } from '../helpers/poll';

const db = testDb(8);
test.after.always(() => db.end());

test('the same key recorded by 8 requests at once makes one purchase, and the others read it back', async (t) => {
  const sku = uniqueSku('open');
  for (let round = 0; round < 40; round++) {
    const key = randomUUID();
    const req = { sku, buyerId: `buyer-${round}`, quantity: 1 };
    const opened = await Promise.all(Array.from({ length: 8 }, () => openPurchase(db, key, req)));
    t.is(opened.filter((o) => o.outcome === 'created').length, 1, `round ${round}`);
    t.true(opened.every((o) => o.outcome !== 'held' && o.record.purchaseId === purchaseIdFor(key, req.buyerId)));
  }
  const { rows } = await db.query('SELECT count(*)::int AS n FROM purchases WHERE sku = $1', [sku]);
  t.is(rows[0].n, 40);
});

test('one buyer recording 8 purchases of one SKU at once with 8 keys gets one place; the others name it', async (t) => {
  const sku = uniqueSku('one-place');
  for (let round = 0; round < 20; round++) {
    const req = { sku, buyerId: `buyer-${round}`, quantity: 1 };
    const opened = await Promise.all(Array.from({ length: 8 }, () => openPurchase(db, randomUUID(), req)));
    const created = opened.filter((o) => o.outcome === 'created');
    t.is(created.length, 1, `round ${round}: ${opened.map((o) => o.outcome).join(', ')}`);
    const place = created[0].record.purchaseId;
    t.true(
      opened.every((o) => o.outcome === 'created' || (o.outcome === 'held' && o.heldBy === place)),
      `round ${round}: the refused are told the purchase that holds the place`,
    );
  }
  const { rows } = await db.query('SELECT count(*)::int AS n FROM purchases WHERE sku = $1', [sku]);
  t.is(rows[0].n, 20);
});

test("a purchase that left the line (refused, or failed) is no longer the buyer's place", async (t) => {
  const sku = uniqueSku('left-line');
  const req = { sku, buyerId: 'buyer-left', quantity: 1 };
  const first = await openPurchase(db, randomUUID(), req);
  if (first.outcome !== 'created') return t.fail(first.outcome);
  t.like(await openPurchase(db, randomUUID(), req), { outcome: 'held', heldBy: first.record.purchaseId });
  await db.query(`UPDATE purchases SET status = 'rejected' WHERE purchase_id = $1`, [first.record.purchaseId]);
  t.like(await openPurchase(db, randomUUID(), req), { outcome: 'created' });
});

test('a purchase stuck in holding over a minute past its slot does not lock its buyer out', async (t) => {
  const sku = uniqueSku('stuck-line');
  const req = { sku, buyerId: 'buyer-stuck', quantity: 1 };
  const first = await openPurchase(db, randomUUID(), req);
  if (first.outcome !== 'created') return t.fail(first.outcome);
  await db.query(`UPDATE purchases SET checkout_at = now() - interval '61 seconds' WHERE purchase_id = $1`, [
    first.record.purchaseId,
  ]);
  t.like(await openPurchase(db, randomUUID(), req), { outcome: 'created' });
});

/** A pool whose statements this file can tell apart on the shared database (other files run beside it). */
const racing = new pg.Pool({
  connectionString: process.env.DATABASE_URL,
  application_name: 'open-purchase-race',
  max: 2,
});
test.after.always(() => racing.end());

/** Until a statement of `racing` waits for a row lock another transaction holds. */
function untilRacingWaits(): Promise<true> {
  return until('the racing statement waits on the other transaction', async () => {
    const { rows } = await db.query(
      `SELECT count(*)::int AS n FROM pg_stat_activity
        WHERE application_name = 'open-purchase-race' AND wait_event_type = 'Lock'`,
    );
    return rows[0].n > 0 ? true : undefined;
  });
}

/** An admitted ticket of `buyerId` to `sku`'s room, its session 5 minutes long; the ticket id. */
async function admittedTicket(sku: string, buyerId: string): Promise<string> {
  const ticketId = `ticket-${randomUUID()}`;
  await db.query(
    `INSERT INTO room_tickets (sku, buyer_id, ticket_id, place, admitted_at, admission_expires_at)
     VALUES ($1, $2, $3, 0, now(), now() + interval '5 minutes')`,
    [sku, buyerId, ticketId],
  );
  return ticketId;
}

/** A transaction of another connection, left open: `write` runs in it, and `commit()` ends it. */
async function openTransaction(t: ExecutionContext, write: (c: pg.Client) => Promise<unknown>) {
  const other = new pg.Client({ connectionString: process.env.DATABASE_URL });
  await other.connect();
  t.teardown(() => other.end());
  await other.query('BEGIN');
  await write(other);
  return { commit: () => other.query('COMMIT') };
}

test("a key recorded meanwhile for another SKU leaves this SKU's admission unspent", async (t) => {
  const [first, second] = [await roomProduct(db, 'spend-a'), await roomProduct(db, 'spend-b')];
  const buyerId = `buyer-${randomUUID().slice(0, 8)}`;
  const ticketId = await admittedTicket(second, buyerId);
  // The same key, used by another request of this buyer for the first SKU: recorded, not committed yet.
  const key = randomUUID();
  const other = await openTransaction(t, (c) =>
    c.query(
      `INSERT INTO purchases (purchase_id, idempotency_key, request, sku, buyer_id, quantity, status)
       VALUES ($1, $2, $3, $4, $5, 1, 'holding')`,
      [purchaseIdFor(key, buyerId), key, JSON.stringify({ sku: first, buyerId, quantity: 1 }), first, buyerId],
    ),
  );
  const opening = openPurchase(racing, key, { sku: second, buyerId, quantity: 1 }, { ticketId });
  await untilRacingWaits(); // its insert waits on the other's row with the same purchase id
  await other.commit();
  const opened = await opening;
  t.like(opened, { outcome: 'known', record: { sku: first } }, 'the key names the purchase of the first SKU');
  const { rows } = await db.query('SELECT purchase_id FROM room_tickets WHERE ticket_id = $1', [ticketId]);
  t.is(rows[0].purchase_id, null, 'the admission to the second SKU is not spent on it');
  // The buyer buys the second SKU with its admission under a key of its own.
  const bought = await openPurchase(db, randomUUID(), { sku: second, buyerId, quantity: 1 }, { ticketId });
  t.like(bought, { outcome: 'created', record: { sku: second } });
});

test('an admission whose session the admitter ends meanwhile records no purchase', async (t) => {
  const sku = await roomProduct(db, 'spend-late');
  const buyerId = `buyer-${randomUUID().slice(0, 8)}`;
  const ticketId = await admittedTicket(sku, buyerId);
  // The admitter lapses the session (its own clock says it is over), not committed yet.
  const admitter = await openTransaction(t, (c) =>
    c.query(`UPDATE room_tickets SET left_at = now(), left_reason = 'expired' WHERE ticket_id = $1`, [ticketId]),
  );
  const key = randomUUID();
  const opening = openPurchase(racing, key, { sku, buyerId, quantity: 1 }, { ticketId });
  await untilRacingWaits();
  await admitter.commit();
  await t.throwsAsync(opening, { instanceOf: NotAdmittedError });
  const { rows } = await db.query('SELECT count(*)::int AS n FROM purchases WHERE purchase_id = $1', [
    purchaseIdFor(key, buyerId),
  ]);
  t.is(rows[0].n, 0, 'no purchase on an admission that is over');
});
