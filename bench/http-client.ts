import http from 'node:http';
import https from 'node:https';

/** HTTP for the benchmarks: one keep-alive agent sized to the concurrency (undici is not installed: node:http). */

/** Shorter than any server's idle timeout the benchmarks and the drill meet (HAProxy's 30 s in the cluster). */
const IDLE_CONNECTION_MS = 20_000;

export interface Reply {
  status: number;
  body: string;
  /** ms the request waited in this client for one of its sockets (all busy) before it was sent. */
  waitedMs: number;
}

export class HttpClient {
  private readonly agent: http.Agent;
  private readonly transport: typeof http | typeof https;
  private readonly url: URL;

  /**
   * `timeoutMs`: a request with no answer by then fails (as a network error). `localAddress`: where
   * each new connection comes from (the drill's crowd, many loopback addresses as many clients).
   * `idleMs`: how long a connection is kept open with nothing to send.
   */
  constructor(
    base: string,
    sockets: number,
    private readonly timeoutMs: number,
    localAddress?: () => string,
    idleMs = IDLE_CONNECTION_MS,
  ) {
    this.url = new URL(base);
    this.transport = this.url.protocol === 'https:' ? https : http;
    // With an address per connection, FIFO takes the idle connections in turn, so that the requests
    // spread over the addresses instead of keeping to the one socket used last.
    const agentOpts = {
      keepAlive: true,
      // An idle connection is closed here before the server closes it (the cluster's HAProxy after
      // 30 s, `timeout http-keep-alive`; Node's servers say theirs in `Keep-Alive`, which the agent
      // follows): a busy client reads the server's close late, after picking the connection again.
      timeout: idleMs,
      maxSockets: sockets,
      maxFreeSockets: sockets,
      ...(localAddress ? { scheduling: 'fifo' as const } : {}),
    };
    this.agent = this.url.protocol === 'https:' ? new https.Agent(agentOpts) : new http.Agent(agentOpts);
    if (localAddress) {
      // Set here, not per request: a per-request localAddress would split the pool by address.
      const connect = this.agent.createConnection.bind(this.agent);
      this.agent.createConnection = (opts, done) => connect({ ...opts, localAddress: localAddress() }, done);
    }
  }

  /**
   * One request. A request sent on a kept-alive connection that the server had just closed as idle
   * (reset before any answer: Node marks it `reusedSocket`) is sent once more on another, as a
   * browser does: the server never read it. Without this, a client whose event loop runs late reads
   * the server's close only after it has picked that connection again.
   */
  async send(method: string, pathname: string, headers: Record<string, string> = {}, body?: string): Promise<Reply> {
    try {
      return await this.sendOnce(method, pathname, headers, body);
    } catch (err) {
      if (!closedWhileIdle(err)) throw err;
      return this.sendOnce(method, pathname, headers, body);
    }
  }

  private sendOnce(method: string, pathname: string, headers: Record<string, string>, body?: string): Promise<Reply> {
    return new Promise((resolve, reject) => {
      const asked = performance.now();
      let waitedMs = 0;
      const req = this.transport.request(
        {
          host: this.url.hostname,
          port: this.url.port || (this.url.protocol === 'https:' ? 443 : 80),
          method,
          path: pathname,
          agent: this.agent,
          headers: body === undefined ? headers : { ...headers, 'content-length': String(Buffer.byteLength(body)) },
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () =>
            resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8'), waitedMs }),
          );
          res.on('error', reject);
        },
      );
      // A request queued behind busy sockets is given one later: the wait is the client's, not the server's.
      req.once('socket', () => (waitedMs = performance.now() - asked));
      req.setTimeout(this.timeoutMs, () => req.destroy(new Error(`no answer within ${this.timeoutMs} ms`)));
      req.on('error', (err: NodeJS.ErrnoException & { reusedSocket?: boolean }) => {
        err.reusedSocket = req.reusedSocket;
        reject(err);
      });
      req.end(body);
    });
  }

  async json(method: string, pathname: string, headers: Record<string, string> = {}, body?: unknown) {
    const r = await this.send(
      method,
      pathname,
      body === undefined ? headers : { ...headers, 'content-type': 'application/json' },
      body === undefined ? undefined : JSON.stringify(body),
    );
    return { status: r.status, body: parseJson(r.body) };
  }

  close(): void {
    this.agent.destroy();
  }
}

const closedWhileIdle = (err: unknown): boolean => {
  const e = err as NodeJS.ErrnoException & { reusedSocket?: boolean };
  return e?.reusedSocket === true && e.code === 'ECONNRESET';
};

/** A JSON object body, or `{}` for anything else (empty, not JSON, not an object). */
export function parseJson(text: string): Record<string, unknown> {
  try {
    const v: unknown = JSON.parse(text);
    return v && typeof v === 'object' ? (v as Record<string, unknown>) : {};
  } catch {
    return {};
  }
}

/**
 * The API's own counters (`flashsale_*_total` with their labels, Node's process ones left out), from
 * /metrics: one API process's view of the funnel, whatever names it uses this week.
 */
export async function apiCounters(client: HttpClient): Promise<Map<string, number>> {
  const m = new Map<string, number>();
  try {
    const r = await client.send('GET', '/metrics');
    for (const match of r.body.matchAll(/^(flashsale_\w+_total)(\{[^}]*\})? (\S+)$/gm)) {
      if (/^flashsale_(process|nodejs)_/.test(match[1])) continue;
      m.set(`${match[1].replace(/^flashsale_/, '')}${match[2] ?? ''}`, Number(match[3]));
    }
  } catch {
    // metrics are a nice-to-have here
  }
  return m;
}
