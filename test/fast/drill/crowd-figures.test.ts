import test from 'ava';
import { crowdFigures, crowdRows, minutesInLine } from '../../../drill/crowd-figures';
import { Recorder, type BuyerRecord } from '../../../drill/recorder';

const buyer = (id: string, arrivedAt?: number, leftLineAt?: number): BuyerRecord => ({
  buyerId: id,
  behaviour: 'pay',
  early: false,
  phase: 'done',
  posts: 0,
  ...(arrivedAt === undefined ? {} : { arrivedAt }),
  ...(leftLineAt === undefined ? {} : { leftLineAt }),
});

test('the crowd figures count joins, polls per buyer in line and per minute waited, and purchase reads, whatever each answered', (t) => {
  const r = new Recorder(Date.now());
  // Two buyers in line: one for a minute, one for two (arriving before the opening counts too).
  r.buyers.push(buyer('a', 0, 60_000), buyer('b', -30_000, 90_000), buyer('never-joined'));
  for (const ms of [10, 20]) r.record('POST /v1/products/:sku/queue 201', ms);
  r.record('POST /v1/products/:sku/queue network error', 5_000);
  for (let i = 0; i < 5; i++) r.record('GET /v1/queue/:ticket 200', 4);
  r.record('GET /v1/queue/:ticket 404 ticket-not-found', 2);
  r.record('GET /v1/purchases/:id 200', 30);
  // Not the queue's: a route that only starts alike.
  r.record('GET /v1/queue/:ticketx 200', 1);

  const c = crowdFigures(r);
  t.like(c, { inLine: 2, minutesWaited: 3, pollsPerBuyer: 3, pollsPerMinuteWaited: 2 });
  t.like(c.joins, { count: 3, max: 5_000 });
  t.is(c.polls.count, 6);
  t.like(c.purchaseReads, { count: 1, p99: 30 });
  t.deepEqual(
    crowdRows(c).map(([k]) => k),
    ['room joins', 'queue polls', 'purchase reads'],
  );
  t.regex(crowdRows(c)[1][1], /^6: 3 per buyer in line, 2 per minute waited \(3 buyer-minutes\)/);
});

test('a buyer who never reached the line waited no time, and a crowd nobody waited in has no rate', (t) => {
  t.is(minutesInLine(buyer('x', 5_000)), 0);
  const r = new Recorder(Date.now());
  r.buyers.push(buyer('x'));
  t.like(crowdFigures(r), { inLine: 0, minutesWaited: 0, pollsPerBuyer: 0, pollsPerMinuteWaited: 0 });
});
