import type { IncomingMessage } from 'node:http';
import { isIP } from 'node:net';
import type Koa from 'koa';
import proxyaddr from 'proxy-addr';

// The client's address, resolved once per request and set as `ctx.ip`, so that the per-address
// limits, the access log and the audit lines all key on the same one. Behind a trusted balancer
// (TRUSTED_PROXIES) it is the right-most X-Forwarded-For entry that is not a trusted proxy: entries
// further left are whatever the client wrote. From any other peer the header is ignored. Koa's own
// `app.proxy` is left off: it believes the header from every peer.

export type Trust = (address: string, hop: number) => boolean;

const TRUST_NONE: Trust = () => false;

/** The trust function of TRUSTED_PROXIES' entries (validated by config/trusted-proxies.ts). */
export function compileTrust(trusted: readonly string[]): Trust {
  return trusted.length ? proxyaddr.compile([...trusted]) : TRUST_NONE;
}

/** `a.b.c.d:port` and `[v6]:port` (some balancers write the client's port too) without the port. */
function withoutPort(entry: string): string {
  const v4 = /^(\d{1,3}(?:\.\d{1,3}){3}):\d+$/.exec(entry);
  if (v4) return v4[1];
  const v6 = /^\[([0-9a-fA-F:.]+)\]:\d+$/.exec(entry);
  return v6 ? v6[1] : entry;
}

/**
 * The client's address of one request: the socket's peer, or, when the peer is a trusted proxy,
 * the nearest address in X-Forwarded-For that is not one. An entry that is no address at all
 * (a trusted hop forwarded garbage) gives way to the hop that forwarded it, so a bot cannot make a
 * fresh limiter key of every request. '' when the socket is already gone.
 */
export function clientAddressOf(req: IncomingMessage, trust: Trust): string {
  if (!req.socket?.remoteAddress) return '';
  const chain = proxyaddr.all(req, trust);
  for (let i = chain.length - 1; i >= 0; i--) {
    const address = withoutPort(chain[i]);
    if (isIP(address)) return address;
  }
  return req.socket.remoteAddress;
}

/** First in the chain: sets `ctx.ip` (Koa's setter) before the access log or a limit reads it. */
export function resolveClientAddress(trusted: readonly string[]): Koa.Middleware {
  const trust = compileTrust(trusted);
  return async (ctx, next) => {
    ctx.request.ip = clientAddressOf(ctx.req, trust);
    await next();
  };
}
