import test from 'ava';
import { asBuyer, buyerToken, startSystem, type System } from '../helpers/system';
import { roomBuyers } from '../helpers/room';
import { alterSignature } from '../helpers/tamper';

// A spent turn and a passed one, against the real stack: the queue page shows the purchase a turn
// was spent on as soon as it is recorded (no Buy form whose admission would be refused), and says
// plainly when the turn has passed, offering no new place: a buyer has one ticket per SKU, and
// joining again returns it (200) whatever became of it, while forged tickets stay 404.

let sys: System;
test.before(async () => {
  sys = await startSystem({ roomTickMs: 50, roomRefreshMs: 100, ownDatabase: true });
});
test.after.always(async () => {
  await sys?.close();
});

const { join, pollUntil, buyWith } = roomBuyers(() => sys);

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
  'once a turn is spent the queue page links to the purchase instead of Buy; when that purchase ends unsold it says the turn passed, and a join is still that ticket',
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
    // Someone else with the URL sees what a poll shows: not which purchase the turn became.
    const stranger = await queuePage(admitted.ticket, 'spent-eve');
    t.is(stranger.status, 200);
    t.false(stranger.text.includes(purchaseId), 'another buyer does not see the purchase');
    t.notRegex(stranger.text, /data-state="bought"/);

    // While the purchase is under way, joining again is the same ticket.
    const during = await join(sku, 'spent-ann');
    t.is(during.status, 200);
    t.is(during.body.ticket, admitted.ticket);

    // She gives the unit back: the purchase ended without a sale, and her turn with it, for good.
    const cancelled = await sys.api(
      'POST',
      `/v1/purchases/${purchaseId}/cancel`,
      undefined,
      await asBuyer('spent-ann'),
    );
    t.is(cancelled.status, 200);
    const over = await pageUntil(admitted.ticket, 'spent-ann', 'spent');
    t.true(over.includes(`href="/purchases/${purchaseId}"`));
    t.regex(over, /<h1>Your turn has passed<\/h1>/);
    t.false(over.includes('Join the queue again'), 'no new place is offered');
    t.false(over.includes('name="admissionToken"'));
    const again = await join(sku, 'spent-ann');
    t.is(again.status, 200, 'one ticket per buyer and SKU');
    t.is(again.body.ticket, admitted.ticket);
    t.like(again.body, { state: 'admitted', purchaseId });
    t.is(again.body.admissionToken, undefined, 'a spent turn carries no token');
    const { rows } = await sys.db.query('SELECT count(*)::int AS n FROM room_tickets WHERE sku = $1', [sku]);
    t.is(rows[0].n, 1, 'no second ticket was written');
  },
);

test.serial(
  'joining again while waiting, admitted or after the turn expired is the same ticket, and forged tickets are 404',
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

    // Ann lets her 2 s pass unused: her turn has passed, and joining again gives her no new place.
    await pollUntil(ann, (b) => b.state === 'expired');
    const after = await join(sku, 'exp-ann');
    t.is(after.status, 200);
    t.is(after.body.ticket, ann);
    t.is(after.body.state, 'expired');
    const places = await sys.db.query(
      'SELECT buyer_id, place::int AS place FROM room_tickets WHERE sku = $1 ORDER BY place',
      [sku],
    );
    t.deepEqual(
      places.rows.map((r) => r.buyer_id),
      ['exp-ann', 'exp-bob', 'exp-cy'],
      'one ticket per buyer',
    );
    const page = await queuePage(ann, 'exp-ann');
    t.regex(page.text, /data-state="expired"/);
    t.false(page.text.includes('Join the queue again'), 'the page offers no new place');

    // Forged tickets are 404, on the poll and the page.
    const [payload, sig] = cy.split('.');
    // Its claims are sealed: a forger writes their own, in the clear (version 1), under its signature.
    const bobs = Buffer.from(JSON.stringify([1, sku, 'exp-bob', 'tk-bob', 1])).toString('base64url');
    for (const bad of [`${bobs}.${sig}`, alterSignature(`${payload}.${sig}`)]) {
      const res = await sys.api('GET', `/v1/queue/${bad}`);
      t.is(res.status, 404, bad);
      t.is(res.body.type, 'ticket-not-found');
      t.is((await queuePage(bad, 'exp-bob')).status, 404);
    }
  },
);

test.serial(
  'after the session, anyone but the ticket’s buyer sees its turn passed: not which purchase it became, nor how that ended',
  async (t) => {
    const sku = await sys.createProduct({
      stock: 2,
      waitingRoom: { admitPerSecond: 50, maxActive: 5, sessionSeconds: 2 },
    });
    const { body: joined } = await join(sku, 'over-ann');
    const admitted = await pollUntil(joined.ticket, (b) => b.state === 'admitted');
    const bought = await buyWith(sku, 'over-ann', admitted.admissionToken);
    t.is(bought.status, 201, JSON.stringify(bought.body));
    const { purchaseId } = bought.body;
    const cancelled = await sys.api('POST', `/v1/purchases/${purchaseId}/cancel`, undefined, await asBuyer('over-ann'));
    t.is(cancelled.status, 200);
    // Her own page says how the turn ended once the session is over.
    await pageUntil(admitted.ticket, 'over-ann', 'spent');
    await new Promise((r) => setTimeout(r, Math.max(0, Date.parse(admitted.admissionExpiresAt) - Date.now() + 200)));
    const anonymous = await fetch(`${sys.apiUrl}/queue/${encodeURIComponent(admitted.ticket)}`);
    for (const [who, page] of [
      ['another buyer', await queuePage(admitted.ticket, 'over-eve')],
      ['a browser signed in as nobody', { status: anonymous.status, text: await anonymous.text() }],
    ] as const) {
      t.is(page.status, 200, who);
      t.false(page.text.includes(purchaseId), `${who} does not see the purchase`);
      t.notRegex(page.text, /data-state="(spent|bought)"/, `${who} does not see how it ended`);
      t.regex(page.text, /data-state="expired"/, `${who} sees the turn passed`);
    }
  },
);
