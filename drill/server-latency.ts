// The APIs' own time for each route, from their /metrics histograms
// (flashsale_http_request_duration_seconds: from the request's arrival in Koa to its answer), read
// when the drop starts and when it ends. Beside the buyers' latencies it says where a slow answer's
// time went: in the API, or before it (the balancer, the kernel's queues, a busy machine).
import { HttpClient } from '../bench/http-client';

const METRIC = 'flashsale_http_request_duration_seconds_bucket';
/** The routes the drill reports: the crowd's (joins, polls) and the buyers' (purchase reads, purchases). */
export const ROUTES = [
  'POST /v1/products/:sku/queue',
  'GET /v1/queue/:ticket',
  'GET /v1/purchases/:id',
  'POST /v1/purchases',
] as const;
export type ReportedRoute = (typeof ROUTES)[number];

/** Per `METHOD route`, whatever the status: the cumulative count at each bucket's upper bound (s). */
export type Histograms = Map<string, Map<number, number>>;

export interface RouteTime {
  route: ReportedRoute;
  count: number;
  /** ms, interpolated within the bucket as Prometheus's histogram_quantile does. */
  p50: number;
  p99: number;
}

/** The request-duration buckets of one /metrics text, summed over the statuses. */
export function parseHistograms(text: string): Histograms {
  const out: Histograms = new Map();
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${METRIC}{`)) continue;
    const labels = Object.fromEntries([...line.matchAll(/(\w+)="([^"]*)"/g)].map(([, k, v]) => [k, v] as const));
    const count = Number(line.slice(line.lastIndexOf(' ') + 1));
    const le = labels.le === '+Inf' ? Infinity : Number(labels.le);
    if (!labels.method || !labels.route || !Number.isFinite(count) || Number.isNaN(le)) continue;
    const key = `${labels.method} ${labels.route}`;
    let buckets = out.get(key);
    if (!buckets) out.set(key, (buckets = new Map<number, number>()));
    buckets.set(le, (buckets.get(le) ?? 0) + count);
  }
  return out;
}

/** `after` less `before`, per route and bucket (a process restarted between them counts from 0). */
export function since(before: Histograms, after: Histograms): Histograms {
  const out: Histograms = new Map();
  for (const [key, buckets] of after) {
    const was = before.get(key);
    const restarted = [...buckets].some(([le, n]) => n < (was?.get(le) ?? 0));
    out.set(key, new Map([...buckets].map(([le, n]) => [le, restarted ? n : n - (was?.get(le) ?? 0)])));
  }
  return out;
}

/** The `q` quantile in ms; the largest finite bound when it falls in the last, open bucket. */
export function quantileMs(buckets: Map<number, number>, q: number): number {
  const sorted = [...buckets].sort(([a], [b]) => a - b);
  const total = sorted.at(-1)?.[1] ?? 0;
  if (total === 0) return 0;
  const rank = q * total;
  let lower = 0;
  let below = 0;
  for (const [le, n] of sorted) {
    if (n >= rank) {
      if (le === Infinity) return lower * 1000;
      const within = n - below;
      const at = within > 0 ? lower + ((le - lower) * (rank - below)) / within : le;
      return Math.round(at * 10_000) / 10;
    }
    if (le !== Infinity) lower = le;
    below = n;
  }
  return lower * 1000;
}

/** The crowd's and the buyers' routes, each with its count and p50/p99 in the APIs. */
export function routeTimes(h: Histograms): RouteTime[] {
  return ROUTES.flatMap((route) => {
    const buckets = h.get(route);
    const count = buckets ? Math.max(0, ...buckets.values()) : 0;
    return count ? [{ route, count, p50: quantileMs(buckets!, 0.5), p99: quantileMs(buckets!, 0.99) }] : [];
  });
}

/** Every API's histograms, summed; an API that does not answer is left out. */
export async function readHistograms(apiUrls: string[]): Promise<Map<string, Histograms>> {
  const out = new Map<string, Histograms>();
  await Promise.all(
    apiUrls.map(async (url) => {
      const client = new HttpClient(url, 1, 10_000);
      try {
        const r = await client.send('GET', '/metrics');
        if (r.status === 200) out.set(url, parseHistograms(r.body));
      } catch {
        // an API killed by a fault: its answers are lost with it
      } finally {
        client.close();
      }
    }),
  );
  return out;
}

/** The drop's time per route, over the APIs read at its end. */
export function dropRouteTimes(before: Map<string, Histograms>, after: Map<string, Histograms>): RouteTime[] {
  const sum: Histograms = new Map();
  for (const [url, h] of after) {
    for (const [key, buckets] of since(before.get(url) ?? new Map<string, Map<number, number>>(), h)) {
      let total = sum.get(key);
      if (!total) sum.set(key, (total = new Map<number, number>()));
      for (const [le, n] of buckets) total.set(le, (total.get(le) ?? 0) + n);
    }
  }
  return routeTimes(sum);
}
