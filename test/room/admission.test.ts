import { randomUUID } from 'node:crypto';
import test from 'ava';
import { createRoomTokens } from '../../config/room-tokens';
import { assertInvariants } from '../helpers/db';
import { until } from '../helpers/poll';
import { ADMIN_TOKEN, asBuyer, ROOM_TOKEN_SECRET, sessionOf, startSystem, type System } from '../helpers/system';
import { roomBuyers } from '../helpers/room';
import { alterSignature } from '../helpers/tamper';

const AS_ADMIN = { authorization: `Bearer ${ADMIN_TOKEN}` };

let sys: System;
test.before(async () => {
  sys = await startSystem({ roomTickMs: 50, roomRefreshMs: 100, ownDatabase: true });
});
test.after.always(async () => {
  await sys?.close();
});

const { join, pollUntil, buyWith, admitAndBuy } = roomBuyers(() => sys, { pollTimeoutMs: 20_000 });

/** Purchase workflows on this file's task queue. */
async function workflows(): Promise<number> {
  const { count } = await sys.temporal.workflow.count(`TaskQueue = '${sys.taskQueue}'`);
  return count;
}

async function nothingWritten(t: import('ava').ExecutionContext, sku: string) {
  const { rows } = await sys.db.query('SELECT count(*)::int AS n FROM purchases WHERE sku = $1', [sku]);
  t.is(rows[0].n, 0, 'no purchase row');
}

test.serial('a waiting room is validated on create, naming the field', async (t) => {
  const base = { sku: `room-bad-${randomUUID().slice(0, 6)}`, name: 'x', priceCents: 100, currency: 'usd', stock: 1 };
  for (const [waitingRoom, field] of [
    [{ admitPerSecond: 0, maxActive: 1 }, 'waitingRoom.admitPerSecond'],
    [{ admitPerSecond: 1, maxActive: 0 }, 'waitingRoom.maxActive'],
    [{ admitPerSecond: 1, maxActive: 1, sessionSeconds: 0 }, 'waitingRoom.sessionSeconds'],
    [{ admitPerSecond: 1 }, 'waitingRoom.maxActive'],
  ] as const) {
    const res = await sys.api('POST', '/v1/products', { ...base, waitingRoom }, AS_ADMIN);
    t.is(res.status, 400);
    t.true(
      res.body.errors.some((e: any) => e.field === field),
      `${JSON.stringify(waitingRoom)} names ${field}: ${JSON.stringify(res.body.errors)}`,
    );
  }
  const late = await sys.api('POST', '/v1/products', { ...base, opensAt: 'tomorrow' }, AS_ADMIN);
  t.is(late.status, 400);
  t.is((await sys.api('GET', `/v1/products/${base.sku}`)).status, 404, 'nothing was created');
});

test.serial('joining twice gives the same ticket; a forged or altered ticket is 404 ticket-not-found', async (t) => {
  const sku = await sys.createProduct({ stock: 3, waitingRoom: { admitPerSecond: 50, maxActive: 10 } });
  t.like((await sys.api('GET', `/v1/products/${sku}`)).body, { waitingRoom: { state: 'open' } });
  const first = await join(sku, 'ann');
  t.is(first.status, 201);
  t.like(first.body, { sku, position: 0 });
  const again = await join(sku, 'ann');
  t.is(again.status, 200);
  t.is(again.body.ticket, first.body.ticket);

  const [payload, sig] = first.body.ticket.split('.');
  const other = Buffer.from(JSON.stringify([1, sku, 'mallory', 'x', 1])).toString('base64url');
  for (const bad of [`${other}.${sig}`, alterSignature(first.body.ticket), 'nonsense', `${payload}.`]) {
    const res = await sys.api('GET', `/v1/queue/${bad}`);
    t.is(res.status, 404, bad);
    t.is(res.body.type, 'ticket-not-found');
  }
  const unknown = await sys.api(
    'POST',
    `/v1/products/nope-${randomUUID().slice(0, 6)}/queue`,
    undefined,
    await asBuyer('ann'),
  );
  t.is(unknown.status, 404);
});

test.serial(
  'an admitted buyer buys once with the admission token; a retry of the same key returns the same purchase',
  async (t) => {
    const sku = await sys.createProduct({ stock: 3, waitingRoom: { admitPerSecond: 50, maxActive: 10 } });
    const { body } = await join(sku, 'bob');
    const admitted = await pollUntil(body.ticket, (b) => b.state === 'admitted');
    t.truthy(admitted.admissionToken);
    t.true(Date.parse(admitted.admissionExpiresAt) > Date.now());

    const none = await buyWith(sku, 'bob');
    t.is(none.status, 403);
    t.is(none.body.type, 'not-admitted');

    const key = randomUUID();
    const bought = await buyWith(sku, 'bob', admitted.admissionToken, key);
    t.is(bought.status, 201, JSON.stringify(bought.body));
    const retry = await buyWith(sku, 'bob', admitted.admissionToken, key);
    t.is(retry.status, 200);
    t.is(retry.body.purchaseId, bought.body.purchaseId);
    // A second purchase with the same admission (another key) is refused in Postgres, and writes nothing.
    await sys.api('POST', `/v1/purchases/${bought.body.purchaseId}/cancel`, undefined, await asBuyer('bob'));
    const second = await buyWith(sku, 'bob', admitted.admissionToken);
    t.is(second.status, 403);
    t.is(second.body.type, 'not-admitted');
    const { rows } = await sys.db.query('SELECT count(*)::int AS n FROM purchases WHERE sku = $1', [sku]);
    t.is(rows[0].n, 1);
  },
);

test.serial("a forged, altered, expired or other buyer's admission token is 403 and writes nothing", async (t) => {
  const sku = await sys.createProduct({ stock: 3, waitingRoom: { admitPerSecond: 50, maxActive: 10 } });
  const { body } = await join(sku, 'cat');
  const admitted = await pollUntil(body.ticket, (b) => b.state === 'admitted');
  const token: string = admitted.admissionToken;
  const forger = createRoomTokens('another-secret-that-is-long-enough-0123456789');
  const ours = createRoomTokens(ROOM_TOKEN_SECRET);
  const { ticketId } = ours.readTicket(body.ticket)!;
  const later = new Date(Date.now() + 60_000);
  const [h, p, s] = token.split('.');
  const claims = JSON.parse(Buffer.from(p, 'base64url').toString());
  const altered = `${h}.${Buffer.from(JSON.stringify({ ...claims, sku: 'other' })).toString('base64url')}.${s}`;
  const cases: [string, string, string][] = [
    [
      'forged',
      'cat',
      await forger.signAdmission({ sku, buyerId: 'cat', ticketId, admittedAt: new Date(), expiresAt: later }),
    ],
    ['altered', 'cat', altered],
    [
      'expired',
      'cat',
      await ours.signAdmission({
        sku,
        buyerId: 'cat',
        ticketId,
        admittedAt: new Date(Date.now() - 9e5),
        expiresAt: new Date(Date.now() - 6e5),
      }),
    ],
    ["another buyer's", 'dan', token],
    ['a ticket as a token', 'cat', body.ticket],
  ];
  const before = await workflows();
  for (const [what, buyer, tok] of cases) {
    const res = await buyWith(sku, buyer, tok);
    t.is(res.status, 403, what);
    t.is(res.body.type, 'not-admitted', what);
  }
  await nothingWritten(t, sku);
  t.is(await workflows(), before, 'no workflow started');
});

test.serial('the operator reads and changes a room live, and /metrics shows it', async (t) => {
  const sku = await sys.createProduct({ stock: 5, waitingRoom: { admitPerSecond: 20, maxActive: 1 } });
  for (const b of ['op-1', 'op-2', 'op-3']) await join(sku, b);
  const deadline = Date.now() + 10_000;
  let room: any;
  do {
    room = (await sys.api('GET', `/v1/products/${sku}/waiting-room`, undefined, AS_ADMIN)).body;
  } while (room.admitted < 1 && Date.now() < deadline);
  t.like(room, { state: 'open', waiting: 2, admitted: 1, active: 1, admitPerSecond: 20, maxActive: 1 });
  t.is((await sys.api('GET', `/v1/products/${sku}/waiting-room`)).status, 401);

  const paused = await sys.api(
    'PATCH',
    `/v1/products/${sku}/waiting-room`,
    { state: 'paused', maxActive: 3 },
    AS_ADMIN,
  );
  t.is(paused.status, 200);
  t.like(paused.body, { state: 'paused', maxActive: 3 });
  await new Promise((r) => setTimeout(r, 500));
  t.like((await sys.api('GET', `/v1/products/${sku}/waiting-room`, undefined, AS_ADMIN)).body, { admitted: 1 });
  t.like((await sys.api('GET', `/v1/products/${sku}`)).body, { waitingRoom: { state: 'paused' } });

  const bad = await sys.api('PATCH', `/v1/products/${sku}/waiting-room`, { state: 'ajar' }, AS_ADMIN);
  t.is(bad.status, 400);
  t.is(bad.body.errors[0].field, 'state');
  // A null state or maxActive is left as it is (as the document says), not refused.
  const nulls = await sys.api('PATCH', `/v1/products/${sku}/waiting-room`, { state: null, maxActive: null }, AS_ADMIN);
  t.is(nulls.status, 200, JSON.stringify(nulls.body));
  t.like(nulls.body, { state: 'paused', maxActive: 3, admitPerSecond: 20 });
  // A product without a room has no waitingRoom field (the contract's `waitingRoom?`).
  const plain = await sys.createProduct({ stock: 1 });
  t.false('waitingRoom' in (await sys.api('GET', `/v1/products/${plain}`)).body);

  await sys.api('PATCH', `/v1/products/${sku}/waiting-room`, { state: 'open' }, AS_ADMIN);
  const until = Date.now() + 10_000;
  do {
    room = (await sys.api('GET', `/v1/products/${sku}/waiting-room`, undefined, AS_ADMIN)).body;
  } while (room.admitted < 3 && Date.now() < until);
  t.like(room, { state: 'open', waiting: 0, admitted: 3, active: 3 });
  const metrics = (await sys.api('GET', '/metrics')).body as string;
  t.true(metrics.includes(`flashsale_room_active{sku="${sku}"} 3`), 'active in /metrics');
  t.true(metrics.includes(`flashsale_room_state{sku="${sku}",state="open"} 1`), 'state in /metrics');
});

/** A product of two named seats behind a room (`extra` adds to or overrides the product). */
async function createSeats(
  t: import('ava').ExecutionContext,
  prefix: string,
  units: [string, string],
  extra: Record<string, unknown>,
): Promise<string> {
  const sku = `${prefix}-${randomUUID().slice(0, 6)}`;
  const body = { sku, name: 'Seats', priceCents: 100, currency: 'usd', stock: 2, units, ...extra };
  const created = await sys.api('POST', '/v1/products', body, AS_ADMIN);
  t.is(created.status, 201, JSON.stringify(created.body));
  return sku;
}

/** `buyer` asks for seat `unitId` of `sku` with an admission token and a new key. */
async function buySeat(sku: string, buyer: string, token: string, unitId: string, key: string = randomUUID()) {
  const headers = { 'idempotency-key': key, ...(await asBuyer(buyer)), 'admission-token': token };
  return sys.api('POST', '/v1/purchases', { sku, unitId }, headers);
}

test.serial(
  'a turn spent on a purchase the hold step refused is given back: the buyer buys with a new key',
  async (t) => {
    const sku = await createSeats(t, 'room-seat', ['A1', 'A2'], {
      waitingRoom: { admitPerSecond: 10, maxActive: 2, sessionSeconds: 60 },
    });
    const first = await pollUntil((await join(sku, 'seat-ann')).body.ticket, (b) => b.state === 'admitted');
    const second = await pollUntil((await join(sku, 'seat-ben')).body.ticket, (b) => b.state === 'admitted');
    const ann = await buySeat(sku, 'seat-ann', first.admissionToken, 'A1');
    t.is(ann.status, 201, JSON.stringify(ann.body));
    // Ben asks for the seat Ann just took: the hold step refuses it, through no fault of his turn.
    const taken = await buySeat(sku, 'seat-ben', second.admissionToken, 'A1');
    t.is(taken.status, 409, JSON.stringify(taken.body));
    // His queue page still offers Buy at once, before the admitter's next step gives the turn back.
    const ben = (await asBuyer('seat-ben')).authorization.replace(/^Bearer /, '');
    const page = await fetch(`${sys.apiUrl}/queue/${encodeURIComponent(second.ticket)}`, {
      headers: { cookie: `buyer_token=${ben}` },
    });
    const html = await page.text();
    t.regex(html, /name="admissionToken"/, 'a turn refused before any hold is not spent: Buy is still there');
    t.notRegex(html, /data-state="(bought|spent)"/);
    // His turn is his again at once (before the admitter's next step), and the other seat is his with a new key.
    const again = await buySeat(sku, 'seat-ben', second.admissionToken, 'A2');
    t.is(again.status, 201, JSON.stringify(again.body));
  },
);

test.serial(
  'a buyer whose turn was given back and who walks away does not keep the unit that comes back from the next in line',
  async (t) => {
    const sku = await createSeats(t, 'room-left', ['B1', 'B2'], {
      holdSeconds: 600,
      waitingRoom: { admitPerSecond: 10, maxActive: 5, sessionSeconds: 600 },
    });
    const ann = await pollUntil((await join(sku, 'left-ann')).body.ticket, (b) => b.state === 'admitted');
    const ben = await pollUntil((await join(sku, 'left-ben')).body.ticket, (b) => b.state === 'admitted');
    const annBought = await buySeat(sku, 'left-ann', ann.admissionToken, 'B1');
    t.is(annBought.status, 201, JSON.stringify(annBought.body));
    // Ben asks for Ann's seat, is told it is taken, and leaves without trying B2. His turn lasts 600 s.
    t.is((await buySeat(sku, 'left-ben', ben.admissionToken, 'B1')).status, 409);
    // Carl waits behind them: two inside, two units obtainable. Once Ben's turn is given back, he no
    // longer stands between Carl and B2.
    const carl = await pollUntil((await join(sku, 'left-carl')).body.ticket, (b) => b.state === 'admitted', 20_000);
    const carlBought = await buySeat(sku, 'left-carl', carl.admissionToken, 'B2');
    t.is(carlBought.status, 201, JSON.stringify(carlBought.body));
    // Ben's turn is still his: he is told the truth, that nothing is free now.
    const benAgain = await buySeat(sku, 'left-ben', ben.admissionToken, 'B2');
    t.is(benAgain.status, 409, JSON.stringify(benAgain.body));
    const { rows } = await sys.db.query(
      `SELECT buyer_id, given_back_at IS NOT NULL AS given_back FROM room_tickets WHERE sku = $1 ORDER BY buyer_id`,
      [sku],
    );
    t.deepEqual(
      rows.map((r) => [r.buyer_id, r.given_back]),
      [
        ['left-ann', false],
        ['left-ben', true],
        ['left-carl', false],
      ],
    );
  },
);

test.serial(
  'buyers whose delayed payment (a bank debit) is settling leave the room: the next in line gets their places, but not units they hold',
  async (t) => {
    const sku = await sys.createProduct({ stock: 3, waitingRoom: { admitPerSecond: 50, maxActive: 2 } });
    // Two buyers take the two places and pay by bank debit: pending for days.
    const settling: string[] = [];
    for (const buyer of ['debit-ann', 'debit-ben']) {
      const bought = await admitAndBuy(sku, buyer);
      t.is(bought.status, 201, JSON.stringify(bought.body));
      await sys.pay(await sessionOf(sys.db, bought.body.purchaseId), 'async_pending');
      settling.push(bought.body.purchaseId);
    }
    for (const id of settling) {
      await sys.waitForPurchase(id, (r) => /delayed payment is settling/.test(r.reason ?? ''));
    }
    // The next buyer is let in to the one free unit, though both settling payments are still pending.
    const { body: third } = await join(sku, 'debit-cat');
    const admitted = await pollUntil(third.ticket, (b) => b.state === 'admitted');
    for (const id of settling) t.is((await sys.purchase(id)).body.status, 'awaiting_payment');
    // One behind her is not let in to the units the settling payments hold: they may still sell. The
    // admitter steps every 50 ms; a second is twenty steps.
    const { body: fourth } = await join(sku, 'debit-dan');
    await new Promise((r) => setTimeout(r, 1000));
    t.like((await sys.api('GET', `/v1/queue/${fourth.ticket}`)).body, { state: 'waiting' });
    // She buys the free unit; once both debits settle, the room is sold out and says so.
    const bought = await buyWith(sku, 'debit-cat', admitted.admissionToken);
    t.is(bought.status, 201, JSON.stringify(bought.body));
    await sys.pay(await sessionOf(sys.db, bought.body.purchaseId), 'succeeded');
    for (const id of settling) await sys.pay(await sessionOf(sys.db, id), 'async_succeeded');
    for (const id of [...settling, bought.body.purchaseId]) {
      await sys.waitForPurchase(id, (r) => r.status === 'confirmed');
    }
    await pollUntil(fourth.ticket, (b) => b.state === 'sold_out');
    t.like(await sys.stock(sku), { sold: 3, held: 0, available: 0 });
    await assertInvariants(t, sys.db, sku);
  },
);

test.serial(
  'a buyer in line is told when to ask again, in the body and Retry-After: rarely far back, often at the head',
  async (t) => {
    const sku = await sys.createProduct({ stock: 3, waitingRoom: { admitPerSecond: 2, maxActive: 5 } });
    await sys.api('PATCH', `/v1/products/${sku}/waiting-room`, { state: 'paused' }, AS_ADMIN);
    const joined = [];
    for (let i = 0; i < 60; i++) joined.push(await join(sku, `line-${i}`));
    const [head, tail] = [joined[0], joined[59]];
    for (const j of [head, tail])
      t.is(j.headers.get('retry-after'), String(j.body.nextPollSeconds), 'the join says it too');
    const poll = async (ticket: string) => sys.api('GET', `/v1/queue/${ticket}`);
    const [atHead, atTail] = [await poll(head.body.ticket), await poll(tail.body.ticket)];
    t.like(atHead.body, { state: 'waiting', position: 0 });
    t.true(atHead.body.nextPollSeconds >= 1 && atHead.body.nextPollSeconds <= 10, `${atHead.body.nextPollSeconds} s`);
    // 59 ahead at 2 a second: no turn for about 28 s, however fast the room resumes.
    t.like(atTail.body, { state: 'waiting', position: 59 });
    t.true(atTail.body.nextPollSeconds >= 20 && atTail.body.nextPollSeconds <= 30, `${atTail.body.nextPollSeconds} s`);
    for (const p of [atHead, atTail]) t.is(p.headers.get('retry-after'), String(p.body.nextPollSeconds));

    await sys.api('PATCH', `/v1/products/${sku}/waiting-room`, { state: 'open' }, AS_ADMIN);
    const admitted = await pollUntil(head.body.ticket, (b) => b.state === 'admitted');
    t.is(admitted.nextPollSeconds, undefined, 'an admitted buyer buys; nothing to ask again');
    t.is((await poll(head.body.ticket)).headers.get('retry-after'), null);
  },
);

test.serial(
  'buyers who bought have left: the line is not told the room is full while their sessions would still run',
  async (t) => {
    const sku = await sys.createProduct({ stock: 5, waitingRoom: { admitPerSecond: 50, maxActive: 2 } });
    for (const buyer of ['full-ann', 'full-ben']) {
      const bought = await admitAndBuy(sku, buyer);
      t.is(bought.status, 201, JSON.stringify(bought.body));
      await sys.pay(await sessionOf(sys.db, bought.body.purchaseId), 'succeeded');
      await sys.waitForPurchase(bought.body.purchaseId, (p) => p.status === 'confirmed');
    }
    // Their sessions (300 s) still run, but both bought and left: nobody is inside. Paused, so the next
    // buyer waits, and the poll says why (paused), not that the room is full.
    t.is((await sys.api('PATCH', `/v1/products/${sku}/waiting-room`, { state: 'paused' }, AS_ADMIN)).status, 200);
    await until('both buyers counted out', async () => {
      const room = await sys.api('GET', `/v1/products/${sku}/waiting-room`, undefined, AS_ADMIN);
      return room.body.active === 0 || undefined;
    });
    const cat = (await join(sku, 'full-cat')).body.ticket as string;
    const waiting = await pollUntil(cat, (b) => b.state === 'waiting' && b.roomFull === false, 5_000);
    t.like(waiting, { roomState: 'paused', roomFull: false });
  },
);
