// The drill's HTTP calls: JSON in and out over the benchmarks' keep-alive client, each answer timed
// and recorded under its route and what it said (`POST /v1/purchases 409 sold-out`).
import { HttpClient, parseJson } from '../bench/http-client';

export interface Answer {
  status: number;
  body: Record<string, unknown>;
}

/** Longer than the API's own purchase deadline (PURCHASE_TIMEOUT_MS, 20 s): the API should answer first. */
const REQUEST_TIMEOUT_MS = 60_000;

export class DrillHttp {
  private readonly client: HttpClient;

  constructor(
    base: string,
    sockets: number,
    /** Where each answer's latency goes (`Recorder.record`). */
    private readonly record: (answer: string, ms: number) => void,
  ) {
    this.client = new HttpClient(base, sockets, REQUEST_TIMEOUT_MS);
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
    try {
      const r = await this.client.send(
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
      throw err;
    }
  }

  close(): void {
    this.client.close();
  }
}

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, Math.max(0, ms)));

/** A string field of an answer, or '' when it is absent or not a string. */
export const str = (v: unknown): string => (typeof v === 'string' ? v : '');
