import { randomUUID } from 'node:crypto';
import test from 'ava';
import { asBuyer, startSystem, type System } from '../helpers/system';
import { roomBuyers } from '../helpers/room';

// A turn spent on a purchase whose saga never got under way (its start failed and the buyer never
// sent the key again, or the API stopped in between): the purchase stays `holding` with no hold.
// Without a room the buyer may buy again a minute past its place in the checkout line; with one,
// the turn is the buyer's again while the session lasts, and the next in line's once it is over.
// Nothing may keep the place (and the unit it counts) for good.

let sys: System;
test.before(async () => {
  // No worker at first: the sagas the API starts do not run (the second test starts one).
  sys = await startSystem({
    worker: false,
    purchaseTimeoutMs: 1500,
    roomTickMs: 50,
    roomRefreshMs: 100,
    ownDatabase: true,
  });
});
test.after.always(async () => {
  await sys?.close();
});

const { join, pollUntil, buyWith } = roomBuyers(() => sys);
const room = { stock: 1, waitingRoom: { admitPerSecond: 20, maxActive: 1, sessionSeconds: 120 } };

/**
 * `buyer` spends the turn on a purchase whose saga never runs: recorded, its start at Temporal is
 * undone (terminated before any worker took it), and its place in the line passed over a minute ago;
 * with `sessionOver`, the admission's session ended in the same moment.
 */
async function lostStart(sku: string, buyer: string, token: string, sessionOver = false): Promise<string> {
  const res = await buyWith(sku, buyer, token);
  if (res.status === 201 || res.status === 403) throw new Error(`buying: ${res.status} ${JSON.stringify(res.body)}`);
  const { rows } = await sys.db.query<{ purchase_id: string }>(
    `WITH p AS (UPDATE purchases SET created_at = created_at - interval '2 minutes',
                                     checkout_at = checkout_at - interval '2 minutes'
                 WHERE sku = $1 AND buyer_id = $2 AND status = 'holding' RETURNING purchase_id),
          t AS (UPDATE room_tickets SET admission_expires_at = now() - interval '1 second'
                 WHERE sku = $1 AND buyer_id = $2 AND $3)
     SELECT purchase_id FROM p`,
    [sku, buyer, sessionOver],
  );
  if (rows.length !== 1) throw new Error(`no purchase of ${buyer} holding`);
  await sys.temporal.workflow.getHandle(`purchase-${rows[0].purchase_id}`).terminate('a start that never happened');
  return rows[0].purchase_id;
}

async function ticketOf(sku: string, buyer: string) {
  const { rows } = await sys.db.query('SELECT * FROM room_tickets WHERE sku = $1 AND buyer_id = $2', [sku, buyer]);
  return rows[0];
}

test.serial(
  'a turn spent on a purchase that never got under way ends with its session: the next in line is let in',
  async (t) => {
    const sku = await sys.createProduct(room);
    const ben = await pollUntil((await join(sku, 'lost-ben')).body.ticket, (b) => b.state === 'admitted');
    const carl = (await join(sku, 'lost-carl')).body.ticket;
    await lostStart(sku, 'lost-ben', ben.admissionToken, true);
    const admitted = await pollUntil(carl, (b) => b.state === 'admitted', 20_000);
    t.truthy(admitted.admissionToken);
    t.is((await ticketOf(sku, 'lost-ben')).left_reason, 'done');
  },
);

test.serial(
  'a turn spent on a purchase that never got under way is the buyer’s again at once: a new key buys',
  async (t) => {
    const sku = await sys.createProduct(room);
    const ann = await pollUntil((await join(sku, 'lost-ann')).body.ticket, (b) => b.state === 'admitted');
    const lost = await lostStart(sku, 'lost-ann', ann.admissionToken);
    await sys.startWorker();
    // Through another API process: the first one's gate still counts the lost purchase's permit for a
    // while, where a process that stopped in between has none.
    const other = await sys.startAnotherApi();
    const headers = {
      'idempotency-key': randomUUID(),
      ...(await asBuyer('lost-ann')),
      'admission-token': ann.admissionToken,
    };
    const again = await sys.api('POST', `${other}/v1/purchases`, { sku }, headers);
    t.true([201, 202].includes(again.status), JSON.stringify(again.body));
    t.not(again.body.purchaseId, lost);
    t.is((await ticketOf(sku, 'lost-ann')).purchase_id, again.body.purchaseId, 'the turn is spent on the new purchase');
    const p = await sys.waitForPurchase(again.body.purchaseId, (r) => r.status === 'awaiting_payment');
    t.truthy(p.checkout_session_id);
  },
);
