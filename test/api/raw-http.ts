import net from 'node:net';

// An HTTP/1.1 client that sends exactly the bytes it is given: any method token, a path with raw
// or broken percent-encodings, header values fetch() and node:http would refuse to send. One
// connection per request (`Connection: close`), read to the end.

export interface RawRequest {
  method: string;
  /** The request target as sent: percent-encoded or not, as the test wants. */
  path: string;
  headers: [string, string][];
  body?: Buffer;
  /** Sends the body as `Transfer-Encoding: chunked` (64 KiB chunks), with no Content-Length. */
  chunked?: boolean;
}

const CHUNK = 64 * 1024;

/** `body` in chunked transfer coding, with its last chunk. */
function chunkedBody(body: Buffer): Buffer {
  const parts: Buffer[] = [];
  for (let at = 0; at < body.length; at += CHUNK) {
    const part = body.subarray(at, at + CHUNK);
    parts.push(Buffer.from(`${part.length.toString(16)}\r\n`, 'latin1'), part, Buffer.from('\r\n', 'latin1'));
  }
  parts.push(Buffer.from('0\r\n\r\n', 'latin1'));
  return Buffer.concat(parts);
}

export interface RawResponse {
  status: number;
  /** Header names lower-cased. */
  headers: Record<string, string>;
  text: string;
  /** The body parsed as JSON, when it is. */
  json?: unknown;
}

function dechunk(body: Buffer): Buffer {
  const parts: Buffer[] = [];
  let at = 0;
  for (;;) {
    const eol = body.indexOf('\r\n', at);
    if (eol < 0) break;
    const size = Number.parseInt(body.subarray(at, eol).toString('latin1'), 16);
    if (!size) break;
    parts.push(body.subarray(eol + 2, eol + 2 + size));
    at = eol + 2 + size + 2;
  }
  return Buffer.concat(parts);
}

function parse(raw: Buffer): RawResponse {
  const end = raw.indexOf('\r\n\r\n');
  if (end < 0) throw new Error(`no complete response head: ${JSON.stringify(raw.toString('latin1').slice(0, 200))}`);
  const [statusLine, ...lines] = raw.subarray(0, end).toString('latin1').split('\r\n');
  const status = Number(statusLine.split(' ')[1]);
  const headers: Record<string, string> = {};
  for (const line of lines) {
    const colon = line.indexOf(':');
    headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
  }
  let body = raw.subarray(end + 4);
  if (/chunked/i.test(headers['transfer-encoding'] ?? '')) body = dechunk(body);
  const text = body.toString('utf8');
  let json: unknown;
  try {
    json = text ? JSON.parse(text) : undefined;
  } catch {
    json = undefined;
  }
  return { status, headers, text, json };
}

/** Sends one request to `baseUrl` and reads the whole answer; rejects after `timeoutMs`. */
export function sendRaw(baseUrl: string, req: RawRequest, timeoutMs = 15_000): Promise<RawResponse> {
  const url = new URL(baseUrl);
  const head =
    `${req.method} ${req.path} HTTP/1.1\r\n` +
    `Host: ${url.host}\r\n` +
    'Connection: close\r\n' +
    req.headers.map(([k, v]) => `${k}: ${v}\r\n`).join('') +
    (req.body === undefined
      ? ''
      : req.chunked
        ? 'Transfer-Encoding: chunked\r\n'
        : `Content-Length: ${req.body.length}\r\n`) +
    '\r\n';
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    const socket = net.connect(Number(url.port), url.hostname, () => {
      socket.write(Buffer.from(head, 'latin1'));
      if (req.body !== undefined) socket.write(req.chunked ? chunkedBody(req.body) : req.body);
    });
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`no answer within ${timeoutMs} ms to ${req.method} ${req.path.slice(0, 80)}`));
    }, timeoutMs);
    socket.on('data', (c: Buffer) => chunks.push(c));
    // The server may close while the body is still being written (it answered before reading it).
    socket.on('error', (err: NodeJS.ErrnoException) => {
      if (err.code !== 'EPIPE' && err.code !== 'ECONNRESET') {
        clearTimeout(timer);
        reject(err instanceof Error ? err : new Error(String(err)));
      }
    });
    socket.on('close', () => {
      clearTimeout(timer);
      try {
        resolve(parse(Buffer.concat(chunks)));
      } catch (err) {
        reject(err instanceof Error ? err : new Error(String(err)));
      }
    });
  });
}

/**
 * Sends a request head announcing `declaredLength` body bytes with `Expect: 100-continue`, waits for
 * the server's 100 Continue (the request has reached the app), writes `sent` of the body and closes
 * the connection: a client that cuts its body off.
 */
export function cutOff(baseUrl: string, req: RawRequest & { body: Buffer }, declaredLength: number): Promise<void> {
  const url = new URL(baseUrl);
  const head =
    `${req.method} ${req.path} HTTP/1.1\r\n` +
    `Host: ${url.host}\r\n` +
    req.headers.map(([k, v]) => `${k}: ${v}\r\n`).join('') +
    `Content-Length: ${declaredLength}\r\nExpect: 100-continue\r\n\r\n`;
  return new Promise((resolve, reject) => {
    const socket = net.connect(Number(url.port), url.hostname, () => socket.write(Buffer.from(head, 'latin1')));
    let seen = '';
    socket.on('data', (c: Buffer) => {
      seen += c.toString('latin1');
      if (!/^HTTP\/1\.1 100 /.test(seen)) return;
      socket.write(req.body, () => {
        socket.destroy();
        resolve();
      });
    });
    socket.on('error', (err) => reject(err));
  });
}
