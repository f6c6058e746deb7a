import { randomUUID } from 'node:crypto';
import test from 'ava';
import { asBuyer, startSystem, type System } from '../helpers/system';
import { roomBuyers } from '../helpers/room';

// Sold out for now (issue 35, item 3): when every unit is held by buyers inside, the line is told so,
// with how many units could come back and when the next may, without losing a place; a buyer beyond
// reach of them asks again only at the longest interval.

let sys: System;
test.before(async () => {
  sys = await startSystem({ roomTickMs: 50, roomRefreshMs: 100, ownDatabase: true });
});
test.after.always(async () => {
  await sys?.close();
});

const { join, pollUntil, admitAndBuy, buyWith } = roomBuyers(() => sys, { pollTimeoutMs: 20_000 });

test.serial(
  'with both units held by buyers inside, the line is told sold out for now and keeps its places',
  async (t) => {
    const sku = await sys.createProduct({ stock: 2, waitingRoom: { admitPerSecond: 50, maxActive: 10 } });
    const inside: string[] = [];
    for (const buyer of ['ann', 'ben']) {
      const bought = await admitAndBuy(sku, buyer);
      t.is(bought.status, 201, JSON.stringify(bought.body));
      inside.push(bought.body.purchaseId);
    }
    const line = [];
    for (const buyer of ['cat', 'dan', 'eve']) line.push((await join(sku, buyer)).body.ticket as string);

    const [cat, dan, eve] = await Promise.all(line.map((tk) => pollUntil(tk, (b) => b.soldOutForNow !== undefined)));
    t.like(cat, { state: 'waiting', position: 0, soldOutForNow: { unitsMayComeBack: 2, withinReach: true } });
    t.like(dan, { state: 'waiting', position: 1, soldOutForNow: { unitsMayComeBack: 2, withinReach: true } });
    t.like(eve, { state: 'waiting', position: 2, soldOutForNow: { unitsMayComeBack: 2, withinReach: false } });
    // The holds end in 10 minutes (the product's default), plus their grace: that is when the next may come back.
    const next = Date.parse(cat.soldOutForNow.nextMayComeBackAt);
    t.true(next > Date.now() + 8 * 60_000 && next < Date.now() + 12 * 60_000, cat.soldOutForNow.nextMayComeBackAt);
    t.true(cat.nextPollSeconds <= 10, `the head asks again within 10 s, not ${cat.nextPollSeconds}`);
    t.is(eve.nextPollSeconds, 60, 'beyond reach of every unit that may come back: the longest interval');

    // Ann gives hers back: the head of the line is let in, and the rest keep their places.
    const cancelled = await sys.api('POST', `/v1/purchases/${inside[0]}/cancel`, undefined, await asBuyer('ann'));
    t.is(cancelled.status, 200);
    await pollUntil(line[0], (b) => b.state === 'admitted');
    t.like(await pollUntil(line[2], (b) => b.position === 1), { state: 'waiting', position: 1 });
  },
);

test.serial(
  'a buyer inside holding two units counts for both: nobody is let in to be told sold out, the line is told so',
  async (t) => {
    const sku = await sys.createProduct({
      stock: 2,
      maxPerBuyer: 2,
      waitingRoom: { admitPerSecond: 50, maxActive: 10 },
    });
    const ann = await pollUntil((await join(sku, 'ann3')).body.ticket as string, (b) => b.state === 'admitted');
    const both = await sys.api(
      'POST',
      '/v1/purchases',
      { sku, quantity: 2 },
      { 'idempotency-key': randomUUID(), 'admission-token': ann.admissionToken, ...(await asBuyer('ann3')) },
    );
    t.is(both.status, 201, JSON.stringify(both.body));
    const cat = (await join(sku, 'cat3')).body.ticket as string;
    const told = await pollUntil(cat, (b) => b.soldOutForNow !== undefined || b.state !== 'waiting');
    t.like(told, { state: 'waiting', position: 0, soldOutForNow: { unitsMayComeBack: 2, withinReach: true } });
    // Steps of the admitter later, still nobody let in to a unit held.
    await new Promise((r) => setTimeout(r, 500));
    t.like((await sys.api('GET', `/v1/queue/${cat}`)).body, { state: 'waiting' });
  },
);

test.serial('a room with units free says nothing of the kind', async (t) => {
  const sku = await sys.createProduct({ stock: 5, waitingRoom: { admitPerSecond: 50, maxActive: 1 } });
  const first = (await join(sku, 'fay')).body.ticket as string;
  await pollUntil(first, (b) => b.state === 'admitted');
  const second = await pollUntil((await join(sku, 'gus')).body.ticket as string, (b) => b.state === 'waiting');
  t.is(second.soldOutForNow, undefined, 'the room is full, not sold out');
});

test.serial(
  'an admitted buyer told sold out before buying does not keep a unit that comes back from the next in line',
  async (t) => {
    const sku = await sys.createProduct({
      stock: 2,
      maxPerBuyer: 2,
      waitingRoom: { admitPerSecond: 50, maxActive: 10 },
    });
    // Ann and Ben are let in together (two units free); Ann takes both before Ben buys.
    const [ann, ben] = await Promise.all(['ann2', 'ben2'].map(async (b) => (await join(sku, b)).body.ticket as string));
    const [annIn, benIn] = await Promise.all([ann, ben].map((tk) => pollUntil(tk, (b) => b.state === 'admitted')));
    const both = await sys.api(
      'POST',
      '/v1/purchases',
      { sku, quantity: 2 },
      { 'idempotency-key': randomUUID(), 'admission-token': annIn.admissionToken, ...(await asBuyer('ann2')) },
    );
    t.is(both.status, 201, JSON.stringify(both.body));
    const refused = await buyWith(sku, 'ben2', benIn.admissionToken);
    t.like(refused, { status: 409, body: { type: 'sold-out', final: false } });
    // Ben walks away. Cat and Dan wait; Ann gives both units back: both are let in, not only one.
    const line = [];
    for (const buyer of ['cat2', 'dan2']) line.push((await join(sku, buyer)).body.ticket as string);
    const cancelled = await sys.api(
      'POST',
      `/v1/purchases/${both.body.purchaseId}/cancel`,
      undefined,
      await asBuyer('ann2'),
    );
    t.is(cancelled.status, 200);
    const [cat, dan] = await Promise.all(line.map((tk) => pollUntil(tk, (b) => b.state === 'admitted')));
    t.truthy(cat.admissionToken && dan.admissionToken);
    // Ben's turn lasts all the same: the three of them may try, and the first two to buy take the units.
    const tries = await Promise.all([
      buyWith(sku, 'ben2', benIn.admissionToken),
      buyWith(sku, 'cat2', cat.admissionToken),
      buyWith(sku, 'dan2', dan.admissionToken),
    ]);
    t.deepEqual(tries.map((r) => r.status).sort(), [201, 201, 409], JSON.stringify(tries.map((r) => r.body)));
  },
);
