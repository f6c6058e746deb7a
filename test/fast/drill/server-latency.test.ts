import test from 'ava';
import { dropRouteTimes, parseHistograms, quantileMs, since } from '../../../drill/server-latency';

// Two statuses of one route, as prom-client writes them; another metric and another route beside.
const metrics = (n: number) => `# HELP flashsale_http_request_duration_seconds Time to answer
# TYPE flashsale_http_request_duration_seconds histogram
flashsale_http_request_duration_seconds_bucket{le="0.005",method="POST",route="/v1/products/:sku/queue",status="201"} ${10 * n}
flashsale_http_request_duration_seconds_bucket{le="0.01",method="POST",route="/v1/products/:sku/queue",status="201"} ${60 * n}
flashsale_http_request_duration_seconds_bucket{le="0.025",method="POST",route="/v1/products/:sku/queue",status="201"} ${90 * n}
flashsale_http_request_duration_seconds_bucket{le="+Inf",method="POST",route="/v1/products/:sku/queue",status="201"} ${90 * n}
flashsale_http_request_duration_seconds_bucket{le="0.005",method="POST",route="/v1/products/:sku/queue",status="503"} 0
flashsale_http_request_duration_seconds_bucket{le="0.01",method="POST",route="/v1/products/:sku/queue",status="503"} 0
flashsale_http_request_duration_seconds_bucket{le="0.025",method="POST",route="/v1/products/:sku/queue",status="503"} 0
flashsale_http_request_duration_seconds_bucket{le="+Inf",method="POST",route="/v1/products/:sku/queue",status="503"} ${10 * n}
flashsale_http_request_duration_seconds_sum{method="POST",route="/v1/products/:sku/queue",status="201"} 1
flashsale_http_request_duration_seconds_bucket{le="0.005",method="GET",route="/healthz",status="200"} 5
flashsale_other_bucket{le="0.005",method="GET",route="/v1/queue/:ticket",status="200"} 99
`;

test('the APIs’ histograms: summed over the statuses, the drop’s share only, quantiles within the buckets', (t) => {
  const h = parseHistograms(metrics(1));
  t.deepEqual([...h.keys()], ['POST /v1/products/:sku/queue', 'GET /healthz']);
  t.deepEqual(
    [...h.get('POST /v1/products/:sku/queue')!],
    [
      [0.005, 10],
      [0.01, 60],
      [0.025, 90],
      [Infinity, 100],
    ],
  );
  const joins = h.get('POST /v1/products/:sku/queue')!;
  // The 50th of 100 answers is the 40th of the 50 in (5 ms, 10 ms]: 9 ms.
  t.is(quantileMs(joins, 0.5), 9);
  // The 99th is past every finite bound (the 503s took longer): the largest bound, 25 ms.
  t.is(quantileMs(joins, 0.99), 25);
  t.is(quantileMs(new Map([[Infinity, 0]]), 0.5), 0);

  // Read before and after a drop in which each count tripled: the drop's share is twice the first.
  const drop = since(h, parseHistograms(metrics(3)));
  t.is(drop.get('POST /v1/products/:sku/queue')!.get(Infinity), 200);
  // A process restarted between the reads (a count went down) counts from zero.
  t.is(
    since(parseHistograms(metrics(3)), h)
      .get('POST /v1/products/:sku/queue')!
      .get(Infinity),
    100,
  );

  // Two APIs, one of them killed before the end (not read after): the routes the drill names, summed.
  const times = dropRouteTimes(
    new Map([
      ['a', h],
      ['b', h],
    ]),
    new Map([['a', parseHistograms(metrics(2))]]),
  );
  t.deepEqual(times, [{ route: 'POST /v1/products/:sku/queue', count: 100, p50: 9, p99: 25 }]);
});
