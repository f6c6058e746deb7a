// The drill's HTTP calls: JSON in and out over the benchmarks' keep-alive client, each answer timed
// and recorded under its route and what it said (`POST /v1/purchases 409 sold-out`).
import { HttpClient, parseJson } from '../bench/http-client';

export interface Answer {
  status: number;
  body: Record<string, unknown>;
}

/** Longer than the API's own purchase deadline (PURCHASE_TIMEOUT_MS, 20 s): the API should answer first. */
const REQUEST_TIMEOUT_MS = 60_000;

/** A base that refused or dropped a connection is left out this long (an API process that died). */
const DOWN_FOR_MS = 5000;

export class DrillHttp {
  private readonly clients: HttpClient[];
  private readonly downUntil: number[];
  private turn = 0;

  /**
   * Several bases: the calls go round them (the drill spreading its buyers over the APIs when no
   * balancer fronts them), skipping for a while one whose connection failed. `localAddress`: where
   * each new connection comes from (drill/addresses.ts).
   */
  constructor(
    base: string | string[],
    sockets: number,
    /**
     * Where each answer's latency goes (`Recorder.record`): from when a socket took the request, as a
     * buyer with a connection of its own would see it; `waitedMs` is what it waited for one of ours.
     */
    private readonly record: (answer: string, ms: number, waitedMs: number) => void,
    o: { localAddress?: () => string } = {},
  ) {
    const bases = typeof base === 'string' ? [base] : base;
    this.clients = bases.map(
      (b) => new HttpClient(b, Math.ceil(sockets / bases.length), REQUEST_TIMEOUT_MS, o.localAddress),
    );
    this.downUntil = bases.map(() => 0);
  }

  /** The next base in turn that is not down and not `tried` already; one not tried when all are down. */
  private pick(tried: ReadonlySet<number>): number {
    const now = Date.now();
    let fallback: number | undefined;
    for (let i = 0; i < this.clients.length; i++) {
      const n = this.turn++ % this.clients.length;
      if (tried.has(n)) continue;
      if (this.downUntil[n] <= now) return n;
      fallback ??= n;
    }
    return fallback!;
  }

  /**
   * One call; `route` is how it is recorded (`/v1/purchases/:id`). A network failure is recorded
   * as `network error` and thrown.
   */
  async call(
    method: string,
    path: string,
    route: string,
    o: { headers?: Record<string, string>; body?: unknown } = {},
  ): Promise<Answer> {
    const started = performance.now();
    const headers = { ...(o.body !== undefined ? { 'content-type': 'application/json' } : {}), ...o.headers };
    const tried = new Set<number>();
    for (;;) {
      const n = this.pick(tried);
      tried.add(n);
      try {
        const r = await this.clients[n].send(
          method,
          path,
          headers,
          o.body === undefined ? undefined : JSON.stringify(o.body),
        );
        const body = parseJson(r.body);
        const type = typeof body.type === 'string' ? ` ${body.type.replace(/^.*\//, '')}` : '';
        this.record(`${method} ${route} ${r.status}${type}`, performance.now() - started - r.waitedMs, r.waitedMs);
        return { status: r.status, body };
      } catch (err) {
        if (this.clients.length > 1) this.downUntil[n] = Date.now() + DOWN_FOR_MS;
        // A refused connection carried nothing to the API (an API killed by a fault): any call,
        // a purchase too, goes to another base at once, as the balancer's `retry-on conn-failure` would.
        if (refused(err) && tried.size < this.clients.length) continue;
        this.record(`${method} ${route} network error`, performance.now() - started, 0);
        throw err;
      }
    }
  }

  close(): void {
    for (const c of this.clients) c.close();
  }
}

const refused = (err: unknown): boolean => (err as NodeJS.ErrnoException)?.code === 'ECONNREFUSED';

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, Math.max(0, ms)));

/** A string field of an answer, or '' when it is absent or not a string. */
export const str = (v: unknown): string => (typeof v === 'string' ? v : '');

/**
 * A purchase answered 202 (its unit held, its Checkout Session waiting for its turn in the Stripe
 * budget or for a busy machine), read again as its `Location` says until the session is open or the
 * purchase ended without one. Each read waits what the last answer asked
 * (`checkoutQueue.nextPollSeconds`, else half a second) plus `jitterMs()`; a read that throws (an API
 * down for a moment) is tried again. The purchase as last read; `{ status: 'failed' }` on a 404 (not
 * this buyer's after all); undefined once `givenUp()` says so.
 */
export async function followToCheckout(
  read: () => Promise<Answer>,
  accepted: Record<string, unknown>,
  o: { jitterMs: () => number; givenUp: () => boolean },
): Promise<Record<string, unknown> | undefined> {
  let answer = accepted;
  for (;;) {
    const asked = (answer.checkoutQueue as { nextPollSeconds?: unknown } | undefined)?.nextPollSeconds;
    await sleep((typeof asked === 'number' ? asked : 0.5) * 1000 + o.jitterMs());
    try {
      const r = await read();
      if (r.status === 200 && (typeof r.body.checkoutUrl === 'string' || r.body.status !== 'holding')) return r.body;
      if (r.status === 404) return { status: 'failed' };
      answer = r.status === 200 ? r.body : {};
    } catch {
      // the next read may get through
    }
    if (o.givenUp()) return undefined;
  }
}
