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
   * balancer fronts them), skipping for a while one whose connection failed.
   */
  constructor(
    base: string | string[],
    sockets: number,
    /** Where each answer's latency goes (`Recorder.record`). */
    private readonly record: (answer: string, ms: number) => void,
  ) {
    const bases = typeof base === 'string' ? [base] : base;
    this.clients = bases.map((b) => new HttpClient(b, Math.ceil(sockets / bases.length), REQUEST_TIMEOUT_MS));
    this.downUntil = bases.map(() => 0);
  }

  private pick(): number {
    const now = Date.now();
    for (let i = 0; i < this.clients.length; i++) {
      const n = this.turn++ % this.clients.length;
      if (this.downUntil[n] <= now) return n;
    }
    return this.turn++ % this.clients.length;
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
    const n = this.pick();
    try {
      const r = await this.clients[n].send(
        method,
        path,
        headers,
        o.body === undefined ? undefined : JSON.stringify(o.body),
      );
      const body = parseJson(r.body);
      const type = typeof body.type === 'string' ? ` ${body.type.replace(/^.*\//, '')}` : '';
      this.record(`${method} ${route} ${r.status}${type}`, performance.now() - started);
      return { status: r.status, body };
    } catch (err) {
      this.record(`${method} ${route} network error`, performance.now() - started);
      if (this.clients.length > 1) this.downUntil[n] = Date.now() + DOWN_FOR_MS;
      throw err;
    }
  }

  close(): void {
    for (const c of this.clients) c.close();
  }
}

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, Math.max(0, ms)));

/** A string field of an answer, or '' when it is absent or not a string. */
export const str = (v: unknown): string => (typeof v === 'string' ? v : '');
