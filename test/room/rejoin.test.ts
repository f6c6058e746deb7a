import { randomUUID } from 'node:crypto';
import test from 'ava';
import { asBuyer, buyerToken, sessionOf, startSystem, type System } from '../helpers/system';

// A turn that is over and a turn that is spent, against the real stack: the queue page shows the
// purchase a turn was spent on as soon as it is recorded (no Buy form whose admission would be
// refused), and a buyer whose turn is over joins again and takes a new place at the back of the
// line, while a ticket still waiting or admitted is the same ticket however often she joins, and a
// buyer who bought as many as the product allows keeps her spent ticket.

let sys: System;
test.before(async () => {
  sys = await startSystem({ roomTickMs: 50, roomRefreshMs: 100, ownDatabase: true });
});
test.after.always(async () => {
  await sys?.close();
});

async function join(sku: string, buyer: string) {
  return sys.api('POST', `/v1/products/${sku}/queue`, undefined, await asBuyer(buyer));
}

/** Polls a ticket until `pred` holds (or fails with the last answer). */
async function pollUntil(ticket: string, pred: (b: any) => boolean, timeoutMs = 30_000): Promise<any> {
  const deadline = Date.now() + timeoutMs;
  let last: any;
  for (;;) {
    last = await sys.api('GET', `/v1/queue/${ticket}`);
    if (last.status === 200 && pred(last.body)) return last.body;
    if (Date.now() > deadline) throw new Error(`ticket never matched: ${JSON.stringify(last.body)}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

async function buyWith(sku: string, buyer: string, token: string) {
  const headers = { 'idempotency-key': randomUUID(), ...(await asBuyer(buyer)), 'admission-token': token };
  return sys.api('POST', '/v1/purchases', { sku }, headers);
}

/** The queue page of `ticket` as `buyer`'s browser gets it. */
async function queuePage(ticket: string, buyer: string): Promise<{ status: number; text: string }> {
  const res = await fetch(`${sys.apiUrl}/queue/${encodeURIComponent(ticket)}`, {
    headers: { cookie: `buyer_token=${await buyerToken(buyer)}` },
  });
  return { status: res.status, text: await res.text() };
}

/** Loads the queue page until its notice reads `state`. */
async function pageUntil(ticket: string, buyer: string, state: string, timeoutMs = 30_000): Promise<string> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const page = await queuePage(ticket, buyer);
    if (page.text.includes(`data-state="${state}"`)) return page.text;
    if (Date.now() > deadline) throw new Error(`the queue page never read ${state}: ${page.text.slice(0, 2000)}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

test.serial(
  'once a turn is spent the queue page links to the purchase instead of Buy; when that purchase ends unsold the buyer joins again',
  async (t) => {
    const sku = await sys.createProduct({ stock: 3, waitingRoom: { admitPerSecond: 50, maxActive: 5 } });
    const { body: joined } = await join(sku, 'spent-ann');
    const admitted = await pollUntil(joined.ticket, (b) => b.state === 'admitted');
    const before = await queuePage(admitted.ticket, 'spent-ann');
    t.regex(before.text, /name="admissionToken"/, 'an unspent turn shows the Buy form');

    const bought = await buyWith(sku, 'spent-ann', admitted.admissionToken);
    t.is(bought.status, 201, JSON.stringify(bought.body));
    const { purchaseId } = bought.body;
    // The session lasts 300 s: the page knows the turn was spent from the ticket's row at once.
    const page = await queuePage(admitted.ticket, 'spent-ann');
    t.is(page.status, 200);
    t.regex(page.text, /data-state="bought"/);
    t.true(page.text.includes(`<a id="purchase" href="/purchases/${purchaseId}">`), 'links to the purchase page');
    t.false(page.text.includes('name="admissionToken"'), 'no admission token on the page');
    t.false(page.text.includes(`action="/p/${sku}/buy"`), 'no Buy form');
    t.true(Date.parse(admitted.admissionExpiresAt) > Date.now(), 'all of this while the session lasts');

    // A purchase under way is not a turn over: joining again is the same ticket.
    const during = await join(sku, 'spent-ann');
    t.is(during.status, 200);
    t.is(during.body.ticket, admitted.ticket);

    // She gives the unit back: the purchase ended without a sale, and her turn with it.
    const cancelled = await sys.api(
      'POST',
      `/v1/purchases/${purchaseId}/cancel`,
      undefined,
      await asBuyer('spent-ann'),
    );
    t.is(cancelled.status, 200);
    const over = await pageUntil(admitted.ticket, 'spent-ann', 'spent');
    t.true(over.includes(`href="/purchases/${purchaseId}"`));
    t.regex(over, /<a id="rejoin" href="\/p\/[^"]+">Join the queue again<\/a>/);
    const again = await join(sku, 'spent-ann');
    t.is(again.status, 201, 'a new ticket');
    t.not(again.body.ticket, admitted.ticket);
    const turn = await pollUntil(again.body.ticket, (b) => b.state === 'admitted');
    t.truthy(turn.admissionToken, 'the new ticket is admitted in its turn');
    const second = await buyWith(sku, 'spent-ann', turn.admissionToken);
    t.is(second.status, 201, JSON.stringify(second.body));
    // The first ticket's page still tells how that turn ended.
    t.true((await pageUntil(admitted.ticket, 'spent-ann', 'spent')).includes(`href="/purchases/${purchaseId}"`));
  },
);

test.serial(
  'a rejoin after an expired turn gets a new ticket behind those waiting and is admitted in its turn; a rejoin while waiting is the same ticket',
  async (t) => {
    const sku = await sys.createProduct({
      stock: 5,
      waitingRoom: { admitPerSecond: 20, maxActive: 1, sessionSeconds: 2 },
    });
    const ann = (await join(sku, 'exp-ann')).body.ticket;
    await pollUntil(ann, (b) => b.state === 'admitted');
    await join(sku, 'exp-bob');
    const cy = (await join(sku, 'exp-cy')).body.ticket;
    // Joining while waiting, or while admitted, changes nothing.
    for (const [buyer, ticket] of [
      ['exp-ann', ann],
      ['exp-cy', cy],
    ]) {
      const again = await join(sku, buyer);
      t.is(again.status, 200, buyer);
      t.is(again.body.ticket, ticket, buyer);
    }

    // Ann lets her 2 s pass unused: the next is let in, and her join is a new place at the back.
    await pollUntil(ann, (b) => b.state === 'expired');
    const rejoined = await join(sku, 'exp-ann');
    t.is(rejoined.status, 201);
    t.not(rejoined.body.ticket, ann);
    const cyNow = (await sys.api('GET', `/v1/queue/${cy}`)).body;
    if (cyNow.state === 'waiting') t.true(rejoined.body.position > cyNow.position, 'behind Cy, who still waits');
    const places = await sys.db.query(
      'SELECT buyer_id, place::int AS place FROM room_tickets WHERE sku = $1 ORDER BY place',
      [sku],
    );
    t.deepEqual(
      places.rows.map((r) => r.buyer_id),
      ['exp-ann', 'exp-bob', 'exp-cy', 'exp-ann'],
      'the new ticket is last in line',
    );
    const again = await join(sku, 'exp-ann');
    t.is(again.status, 200, 'the new ticket is hers while it waits');
    t.is(again.body.ticket, rejoined.body.ticket);
    t.is((await sys.api('GET', `/v1/queue/${ann}`)).body.state, 'expired', 'the old ticket still reads expired');

    // Bob and Cy let their turns pass too; then Ann is admitted, after both.
    const admitted = await pollUntil(rejoined.body.ticket, (b) => b.state === 'admitted', 60_000);
    t.truthy(admitted.admissionToken);
    const { rows } = await sys.db.query(
      `SELECT buyer_id FROM room_tickets WHERE sku = $1 AND admitted_at IS NOT NULL ORDER BY admitted_at, place`,
      [sku],
    );
    t.deepEqual(
      rows.map((r) => r.buyer_id),
      ['exp-ann', 'exp-bob', 'exp-cy', 'exp-ann'],
      'admitted in the order of the line',
    );
    t.is((await buyWith(sku, 'exp-ann', admitted.admissionToken)).status, 201);

    // Forged tickets are still 404, the old and the new alike, on the poll and the page.
    const [payload, sig] = rejoined.body.ticket.split('.');
    const claims = JSON.parse(Buffer.from(payload, 'base64url').toString());
    const bobs = Buffer.from(JSON.stringify([claims[0], claims[1], 'exp-bob', claims[3], claims[4]])).toString(
      'base64url',
    );
    for (const bad of [`${bobs}.${sig}`, `${payload}.${sig.slice(0, -2)}AA`]) {
      const res = await sys.api('GET', `/v1/queue/${bad}`);
      t.is(res.status, 404, bad);
      t.is(res.body.type, 'ticket-not-found');
      t.is((await queuePage(bad, 'exp-bob')).status, 404);
    }
  },
);

test.serial(
  'a buyer who bought as many as maxPerBuyer keeps her spent ticket; below the limit she may join again',
  async (t) => {
    for (const [maxPerBuyer, buyer, rejoins] of [
      [1, 'lim-one', false],
      [2, 'lim-two', true],
    ] as const) {
      const sku = await sys.createProduct({ stock: 5, maxPerBuyer, waitingRoom: { admitPerSecond: 50, maxActive: 5 } });
      const first = await pollUntil((await join(sku, buyer)).body.ticket, (b) => b.state === 'admitted');
      const bought = await buyWith(sku, buyer, first.admissionToken);
      t.is(bought.status, 201, JSON.stringify(bought.body));
      const paid = await sys.pay(await sessionOf(sys.db, bought.body.purchaseId), 'succeeded');
      t.is(paid.status, 200, JSON.stringify(paid.body));
      await sys.waitForPurchase(bought.body.purchaseId, (p) => p.status === 'confirmed');
      const page = await pageUntil(first.ticket, buyer, 'bought');
      t.true(page.includes(`href="/purchases/${bought.body.purchaseId}"`));
      const again = await join(sku, buyer);
      if (rejoins) {
        t.is(again.status, 201, `${buyer}: one more unit is allowed, so a new place`);
        t.not(again.body.ticket, first.ticket);
      } else {
        t.is(again.status, 200, `${buyer}: the limit is reached, so the same spent ticket`);
        t.is(again.body.ticket, first.ticket);
        t.like(again.body, { state: 'admitted', purchaseId: bought.body.purchaseId });
      }
    }
  },
);
