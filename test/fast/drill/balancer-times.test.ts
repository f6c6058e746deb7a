import test from 'ava';
import { balancerRouteTimes, routeOf } from '../../../drill/balancer-times';

// HAProxy's output as the cluster's balancer writes it (dev/balancer.ts REQUEST_LOG_FORMAT): its own
// warnings beside a line per answer, `request <ms since the epoch> <method> <path> <status> <Ta>`.
const log = [
  '[WARNING]  (21578) : Server apis/api-1 is DOWN, reason: Layer4 connection problem',
  'request 1000 POST /v1/products/hoodie/queue 201 900',
  ...Array.from({ length: 100 }, (_, i) => `request ${2000 + i} POST /v1/products/hoodie/queue 201 ${i + 1}`),
  'request 2050 GET /v1/queue/WzEsImRyaWxsIl0.sig 200 4',
  'request 2051 GET /v1/purchases/pur_1 200 12',
  'request 2052 POST /v1/purchases 202 3000',
  'request 2053 GET /v1/products/hoodie 200 2',
  'request 2054 GET /v1/purchases/pur_1/receipt 200 2',
  'request 2055 POST /v1/products/hoodie/queue 503 -1',
  'request 9000 POST /v1/purchases 201 5',
  '',
].join('\n');

test('the balancer’s time per reported route: the drop’s answers only, one value each, other paths and lines left out', (t) => {
  t.deepEqual(balancerRouteTimes(log, 2000, 8000), [
    { route: 'POST /v1/products/:sku/queue', count: 100, p50: 50, p99: 99 },
    { route: 'GET /v1/queue/:ticket', count: 1, p50: 4, p99: 4 },
    { route: 'GET /v1/purchases/:id', count: 1, p50: 12, p99: 12 },
    { route: 'POST /v1/purchases', count: 1, p50: 3000, p99: 3000 },
  ]);
  // Before the drop: the join that took 900 ms counts.
  t.is(balancerRouteTimes(log, 0, 1500)[0].p50, 900);
  t.deepEqual(balancerRouteTimes('', 0, 1), []);
});

test('a path is one of the reported routes only when it is that route', (t) => {
  t.is(routeOf('POST', '/v1/products/a%20b/queue'), 'POST /v1/products/:sku/queue');
  t.is(routeOf('GET', '/v1/products/a/queue'), undefined);
  t.is(routeOf('GET', '/v1/queue/t'), 'GET /v1/queue/:ticket');
  t.is(routeOf('GET', '/v1/queue/t/x'), undefined);
  t.is(routeOf('POST', '/v1/purchases/p1/cancel'), undefined);
  t.is(routeOf('POST', '/v1/purchases'), 'POST /v1/purchases');
  t.is(routeOf('GET', '/v1/purchases'), undefined);
});
