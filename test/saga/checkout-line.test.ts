import { randomUUID } from 'node:crypto';
import test from 'ava';
import { assertInvariants } from '../helpers/db';
import { asBuyer, startSystem, type System } from '../helpers/system';

// A purchase waiting in the line for its Checkout Session is already its buyer's place on the SKU:
// one buyer sending many purchases at once, each with its own Idempotency-Key, gets one place in the
// line and one permit of the gate; the others are told `hold-exists`, naming that place. No worker
// runs here, so every purchase stays where the line put it, and the line is long (1 checkout a second).

let sys: System;
let otherApi: string;
test.before(async () => {
  sys = await startSystem({ worker: false, ownDatabase: true, checkoutsPerSecond: 1 });
  otherApi = await sys.startAnotherApi();
});
test.after.always(async () => {
  await sys?.close();
});

const buy = async (base: string, sku: string, buyer: string, key: string = randomUUID()) =>
  sys.api('POST', `${base}/v1/purchases`, { sku }, { 'idempotency-key': key, ...(await asBuyer(buyer)) });

/** Purchases by other buyers of another product, so that the line is some seconds long. */
async function fillTheLine(n: number): Promise<void> {
  const filler = await sys.createProduct({ stock: n, holdSeconds: 600 });
  const answers = await Promise.all(
    Array.from({ length: n }, async (_, i) =>
      sys.api(
        'POST',
        '/v1/purchases',
        { sku: filler },
        { 'idempotency-key': randomUUID(), prefer: 'respond-async', ...(await asBuyer(`filler-${filler}-${i}`)) },
      ),
    ),
  );
  for (const a of answers)
    if (a.status !== 202) throw new Error(`filling the line: ${a.status} ${JSON.stringify(a.body)}`);
}

async function placesOf(sku: string) {
  const { rows } = await sys.db.query<{ buyer_id: string; n: number; slotted: number }>(
    `SELECT buyer_id, count(*)::int AS n, count(checkout_at)::int AS slotted FROM purchases WHERE sku = $1
      GROUP BY buyer_id ORDER BY buyer_id`,
    [sku],
  );
  return Object.fromEntries(rows.map((r) => [r.buyer_id, { purchases: r.n, slots: r.slotted }]));
}

for (const [title, baseOf] of [
  ['on one API', () => ''],
  ['over two APIs', (i: number) => (i % 2 ? otherApi : '')],
] as const) {
  test.serial(
    `one buyer's 5 purchases at once with 5 keys ${title}: one place in line, the others told it`,
    async (t) => {
      await fillTheLine(5);
      // Two units: a second place of the attacker's would leave the honest buyer nothing.
      const sku = await sys.createProduct({ stock: 2, holdSeconds: 600 });
      const attacker = `attacker-${sku}`;
      const answers = await Promise.all(Array.from({ length: 5 }, (_, i) => buy(baseOf(i), sku, attacker)));
      const summary = JSON.stringify(answers.map((a) => [a.status, a.body.type ?? a.body.status]));
      const placed = answers.filter((a) => a.status === 202);
      t.is(placed.length, 1, summary);
      const place = placed[0].body.purchaseId as string;
      t.truthy(placed[0].body.checkoutQueue, 'the one place waits in the line');
      const refused = answers.filter((a) => a.status !== 202);
      t.true(
        refused.every((a) => a.status === 409 && a.body.type === 'hold-exists' && a.body.heldBy === place),
        summary,
      );

      // An honest buyer right after: served with a place, behind only the places that can become checkouts.
      const honest = await buy('', sku, `honest-${sku}`);
      t.is(honest.status, 202, JSON.stringify(honest.body));
      const { body: attackerView } = await sys.api('GET', `/v1/purchases/${place}`, undefined, await asBuyer(attacker));
      t.is(
        honest.body.checkoutQueue.ahead,
        attackerView.checkoutQueue.ahead + 1,
        "only the attacker's one place stands between them",
      );
      t.deepEqual(await placesOf(sku), {
        [attacker]: { purchases: 1, slots: 1 },
        [`honest-${sku}`]: { purchases: 1, slots: 1 },
      });
      t.like(await sys.stock(sku), { available: 2, held: 0, sold: 0 });

      // The same key again is the same purchase; a new key is still refused while the place waits.
      t.like((await buy(otherApi, sku, attacker, await keyOf(place))).body, {
        purchaseId: place,
      });
      const again = await buy(otherApi, sku, attacker);
      t.is(again.status, 409);
      t.is(again.body.heldBy, place);
      await assertInvariants(t, sys.db, sku);
    },
  );
}

async function keyOf(purchaseId: string): Promise<string> {
  const { rows } = await sys.db.query<{ k: string }>(
    'SELECT idempotency_key AS k FROM purchases WHERE purchase_id = $1',
    [purchaseId],
  );
  return rows[0].k;
}
