import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import type pg from 'pg';
import { isFinal, type PurchaseStatus } from '../vocabulary';
import { parseJson, type HttpClient } from './http-client';

/**
 * `bench:crowd --respond-async`: after a 202 the buyer's checkout URL shows up later on
 * GET /v1/purchases/:id. This follows every accepted purchase until it reached `awaiting_payment`
 * with a checkout URL (or a final status), bounded: through Postgres while the crowd runs when the
 * database is known (one query per poll, no load on the API), else over HTTP with each buyer's
 * token once the crowd is done (so the time is an upper bound). Either way every accepted purchase
 * is then read once over HTTP with its buyer's token: the URL must be visible to the buyer.
 */

const POLL_MS = 250;
const HTTP_POLLERS = 32;

export interface Accepted {
  purchaseId: string;
  token: string;
}

export interface Checkouts {
  via: string;
  accepted: number;
  /** `awaiting_payment` with a checkout URL. */
  ready: number;
  /** Final statuses reached instead (rejected: the hold step found nothing; 404 to the buyer). */
  finals: Map<string, number>;
  /** Neither when the wait ended. */
  pending: number;
  /** When the last checkout URL was seen, in ms since the crowd's first request (NaN if none). */
  lastReadyMs: number;
  /** How long it waited after the crowd's last answer. */
  waitedMs: number;
  timedOut: boolean;
  /** The buyers' own view: GET /v1/purchases/:id with their token, once, after the wait. */
  visible: Map<string, number>;
}

type Seen = { kind: 'ready' } | { kind: 'final'; status: string } | { kind: 'pending'; status: string };

/** What GET /v1/purchases/:id with the buyer's token says. */
async function readOverHttp(client: HttpClient, a: Accepted): Promise<Seen> {
  try {
    const r = await client.send('GET', `/v1/purchases/${a.purchaseId}`, { authorization: `Bearer ${a.token}` });
    const body = parseJson(r.body);
    if (r.status === 404) return { kind: 'final', status: 'rejected (404 to the buyer)' };
    if (r.status !== 200) return { kind: 'pending', status: `GET ${r.status}` };
    const status = String(body.status);
    if (status === 'awaiting_payment' && typeof body.checkoutUrl === 'string') return { kind: 'ready' };
    if (isFinal(status as PurchaseStatus)) return { kind: 'final', status };
    return { kind: 'pending', status };
  } catch (err) {
    return { kind: 'pending', status: `GET failed: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}` };
  }
}

async function inPool<T>(items: T[], width: number, each: (x: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(width, items.length) }, async () => {
      while (next < items.length) await each(items[next++]);
    }),
  );
}

export class CheckoutFollower {
  private readonly accepted: Accepted[] = [];
  private readonly pending = new Map<string, Accepted>();
  private readonly ready = new Map<string, number>();
  private readonly finals = new Map<string, string>();
  private dbLoop?: Promise<void>;
  /** Set when the crowd is done: the wait ends by then. */
  private until?: number;

  /** `t0`: performance.now() at the crowd's first request. */
  constructor(
    private readonly t0: number,
    private readonly client: HttpClient,
    private readonly db: pg.Pool | undefined,
    private readonly signal: AbortSignal,
  ) {}

  /** Starts following through Postgres at once (without a database, nothing until `finish`). */
  start(): void {
    if (this.db) this.dbLoop = this.followDb(this.db);
  }

  add(a: Accepted): void {
    this.accepted.push(a);
    this.pending.set(a.purchaseId, a);
  }

  private settle(id: string, seen: Seen): void {
    if (seen.kind === 'pending' || !this.pending.has(id)) return;
    this.pending.delete(id);
    if (seen.kind === 'ready') this.ready.set(id, performance.now() - this.t0);
    else this.finals.set(id, seen.status);
  }

  private async followDb(db: pg.Pool): Promise<void> {
    for (;;) {
      if (this.pending.size) {
        try {
          const { rows } = await db.query<{ purchase_id: string; status: string; url: boolean }>(
            'SELECT purchase_id, status, checkout_url IS NOT NULL AS url FROM purchases WHERE purchase_id = ANY($1)',
            [[...this.pending.keys()]],
          );
          for (const r of rows) {
            if (r.status === 'awaiting_payment' && r.url) this.settle(r.purchase_id, { kind: 'ready' });
            else if (isFinal(r.status as PurchaseStatus))
              this.settle(r.purchase_id, { kind: 'final', status: r.status });
          }
        } catch (err) {
          if (this.signal.aborted) return;
          console.error(`checkouts: ${(err as Error).message}`);
        }
      }
      if (this.signal.aborted) return;
      if (this.until !== undefined && (this.pending.size === 0 || performance.now() > this.until)) return;
      await sleep(POLL_MS);
    }
  }

  private async followHttp(until: number): Promise<void> {
    while (this.pending.size && performance.now() < until && !this.signal.aborted) {
      await inPool([...this.pending.values()], HTTP_POLLERS, async (a) =>
        this.settle(a.purchaseId, await readOverHttp(this.client, a)),
      );
      if (this.pending.size) await sleep(POLL_MS);
    }
  }

  /** After the crowd: waits (at most `boundMs`) until nothing is pending, then reads each purchase as its buyer. */
  async finish(boundMs: number): Promise<Checkouts> {
    const crowdEnd = performance.now();
    this.until = crowdEnd + boundMs;
    await (this.dbLoop ?? this.followHttp(this.until));
    const waitedMs = performance.now() - crowdEnd;
    const timedOut = this.pending.size > 0;
    const visible = new Map<string, number>();
    await inPool(this.accepted, HTTP_POLLERS, async (a) => {
      const seen = await readOverHttp(this.client, a);
      const k = seen.kind === 'ready' ? 'awaiting_payment with checkoutUrl' : seen.status;
      visible.set(k, (visible.get(k) ?? 0) + 1);
    });
    const finals = new Map<string, number>();
    for (const s of this.finals.values()) finals.set(s, (finals.get(s) ?? 0) + 1);
    return {
      via: this.db
        ? `Postgres, polled every ${POLL_MS} ms from the crowd's start`
        : `GET /v1/purchases/:id with each buyer's token, polled from the crowd's end (an upper bound)`,
      accepted: this.accepted.length,
      ready: this.ready.size,
      finals,
      pending: this.pending.size,
      lastReadyMs: this.ready.size ? Math.max(...this.ready.values()) : NaN,
      waitedMs,
      timedOut,
      visible,
    };
  }
}
