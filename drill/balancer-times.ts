// The balancer's time for each route the drill reports, from HAProxy's line per answer
// (dev/balancer.ts REQUEST_LOG_FORMAT): from the request's first byte reaching the balancer to the
// answer's last byte leaving it. Between the APIs' own time and what the drill measured, it says
// whether a slow answer waited in the service (the balancer, the kernel, an API's busy event loop)
// or in the drill itself (a client sharing the machine's cores with the service it measures).
import { percentiles } from './recorder';
import { ROUTES, type ReportedRoute, type RouteTime } from './server-latency';

const PATHS: Array<[ReportedRoute, RegExp]> = [
  ['POST /v1/products/:sku/queue', /^POST \/v1\/products\/[^/]+\/queue$/],
  ['GET /v1/queue/:ticket', /^GET \/v1\/queue\/[^/]+$/],
  ['GET /v1/purchases/:id', /^GET \/v1\/purchases\/[^/]+$/],
  ['POST /v1/purchases', /^POST \/v1\/purchases$/],
];

/** The reported route of `METHOD /path`, or undefined. */
export function routeOf(method: string, pathname: string): ReportedRoute | undefined {
  const line = `${method} ${pathname}`;
  return PATHS.find(([, re]) => re.test(line))?.[0];
}

/**
 * Each reported route's count and p50/p99 (ms, exact: a value per answer) over the answers logged
 * between `from` and `to` (ms since the epoch); other lines (HAProxy's warnings) are skipped.
 */
export function balancerRouteTimes(log: string, from: number, to: number): RouteTime[] {
  const times = new Map<ReportedRoute, number[]>();
  for (const line of log.split('\n')) {
    if (!line.startsWith('request ')) continue;
    const [, at, method, pathname, , total] = line.split(' ');
    const ms = Number(total);
    const when = Number(at);
    if (!(when >= from && when <= to) || !Number.isFinite(ms) || ms < 0) continue;
    const route = routeOf(method, pathname);
    if (!route) continue;
    let list = times.get(route);
    if (!list) times.set(route, (list = []));
    list.push(ms);
  }
  return ROUTES.flatMap((route) => {
    const list = times.get(route);
    if (!list) return [];
    const p = percentiles(list);
    return [{ route, count: p.count, p50: p.p50, p99: p.p99 }];
  });
}
