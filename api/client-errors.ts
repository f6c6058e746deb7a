import { STATUS_CODES, type Server } from 'node:http';
import type { Duplex } from 'node:stream';
import { Problem, problemBody } from './problem';

// Requests Node's HTTP parser refuses never reach Koa: an unknown method token, a header with a
// control character, headers too large, a malformed request line. Node would answer them with a
// bare status line; these handlers answer the same statuses as problem+json, and close.

/** The problem for a request Node could not parse. */
function problemFor(code: string | undefined): Problem {
  switch (code) {
    case 'HPE_INVALID_METHOD':
      return new Problem(501, 'not-implemented', 'this method is not implemented by this server');
    case 'HPE_HEADER_OVERFLOW':
      return new Problem(431, 'invalid-request', 'the request headers are too large', {
        errors: [{ field: 'headers', message: 'are too large' }],
      });
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return new Problem(408, 'invalid-request', 'the request took too long to arrive');
    default:
      return new Problem(400, 'invalid-request', 'the request is not valid HTTP/1.1', {
        errors: [{ field: 'request', message: `could not be parsed (${code ?? 'unknown error'})` }],
      });
  }
}

function writeProblem(socket: Duplex, p: Problem): void {
  const body = JSON.stringify(problemBody(p));
  socket.end(
    `HTTP/1.1 ${p.status} ${STATUS_CODES[p.status] ?? 'Error'}\r\n` +
      'Content-Type: application/problem+json\r\n' +
      Object.entries(p.headers)
        .map(([name, value]) => `${name}: ${value}\r\n`)
        .join('') +
      `Content-Length: ${Buffer.byteLength(body)}\r\n` +
      'Connection: close\r\n\r\n' +
      body,
  );
}

/**
 * Answers what Node's parser refuses, and CONNECT, as problems. Returns `server`. CONNECT is a method
 * Node knows and no route serves (nothing tunnels here): 405 with an empty `Allow`, as for any known
 * method a route does not serve; 501 stays for methods the server does not recognise.
 */
export function answerClientErrors<S extends Server>(server: S): S {
  server.on('clientError', (err: NodeJS.ErrnoException, socket: Duplex) => {
    // A response already under way on this connection cannot be followed by another.
    const sending = (socket as Duplex & { _httpMessage?: { headersSent?: boolean } })._httpMessage?.headersSent;
    if (err.code === 'ECONNRESET' || !socket.writable || sending) {
      socket.destroy();
      return;
    }
    writeProblem(socket, problemFor(err.code));
  });
  server.on('connect', (_req, socket: Duplex) => {
    writeProblem(
      socket,
      new Problem(405, 'method-not-allowed', 'CONNECT is not allowed: this server tunnels nothing', {}, { Allow: '' }),
    );
  });
  return server;
}
