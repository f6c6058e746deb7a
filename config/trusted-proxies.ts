import { isIP } from 'node:net';
import proxyaddr from 'proxy-addr';
import type { Reader } from './reader';

// TRUSTED_PROXIES: the balancers whose X-Forwarded-For the API believes (api/client-address.ts).
// Addresses and ranges only, never a hop count: a count trusts the last hops of the header whoever
// sent it, so a client that reaches the API around the balancer would pick its own address.

/** proxy-addr's named ranges, expanded by it: 127.0.0.0/8 and ::1; 169.254/16 and fe80::/10; the private ranges. */
const NAMED_RANGES = ['loopback', 'linklocal', 'uniquelocal'];

const VARIABLE = 'TRUSTED_PROXIES';

/** One entry's problem, or undefined when it is an address, an address/prefix, or a named range. */
function entryProblem(entry: string): string | undefined {
  if (NAMED_RANGES.includes(entry)) return undefined;
  if (/^\d+$/.test(entry)) {
    return `${VARIABLE} takes the balancers' addresses or ranges, not a hop count ("${entry}"): a count would trust X-Forwarded-For from any client that reaches the API directly`;
  }
  const [address, prefix, ...rest] = entry.split('/');
  const family = isIP(address);
  if (!family || rest.length)
    return `${VARIABLE}: "${entry}" is not an IP address, a CIDR range or one of ${NAMED_RANGES.join(', ')}`;
  if (prefix === undefined) return undefined;
  const max = family === 4 ? 32 : 128;
  if (!/^\d+$/.test(prefix) || Number(prefix) > max) {
    return `${VARIABLE}: "${entry}" has no valid prefix length (0 to ${max})`;
  }
  if (Number(prefix) === 0) {
    return `${VARIABLE}: "${entry}" would trust every address, so any client could name its own in X-Forwarded-For`;
  }
  return undefined;
}

/**
 * TRUSTED_PROXIES: addresses, CIDR ranges and proxy-addr's named ranges, separated by commas or
 * spaces; empty (the default): no proxy, the socket's address is the client's.
 */
export function trustedProxies(r: Reader): string[] {
  const entries = (r.raw(VARIABLE) ?? '').split(/[\s,]+/).filter(Boolean);
  const problems = entries.map(entryProblem).filter((p): p is string => p !== undefined);
  if (!problems.length && entries.length) {
    try {
      proxyaddr.compile(entries);
    } catch (err) {
      problems.push(`${VARIABLE}: ${(err as Error).message}`);
    }
  }
  r.problems.push(...problems);
  return entries;
}
