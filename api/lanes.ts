// Which requests are the waiting crowd's, for a balancer that keeps them apart (dev/balancer.ts,
// docs/deploying.md "The crowd on processes of its own"). Every API process serves every route; a
// deployment that runs some processes for the crowd sends them these paths, and the rest (the
// purchases, the buyers' pages, Stripe's webhooks, support and metrics) to the others, so a paid
// buyer's confirmation never waits in one event loop behind thousands of polls. Path prefixes, as
// HAProxy's `path_beg` and a Kubernetes Ingress's `pathType: Prefix` match them.

/**
 * The crowd's paths: the room's polls (`GET /v1/queue/:ticket`) and queue pages (`/queue/:ticket`),
 * and under `/v1/products/` the joins (`POST /v1/products/:sku/queue`), the product reads the crowd
 * refreshes, and the room's state. The product page (`/p/:sku`) stays with the buyers: its Buy form
 * posts a purchase under the same prefix.
 */
export const CROWD_PATH_PREFIXES = ['/v1/queue/', '/queue/', '/v1/products/'] as const;

export type Lane = 'crowd' | 'buyers';

/** The lane a request path belongs to. */
export function laneOf(path: string): Lane {
  return CROWD_PATH_PREFIXES.some((p) => path.startsWith(p)) ? 'crowd' : 'buyers';
}
