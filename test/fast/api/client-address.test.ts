import type { IncomingMessage } from 'node:http';
import test from 'ava';
import { clientAddressOf, compileTrust } from '../../../api/client-address';
import { ConfigError, loadApiConfig } from '../../../config';
import { API_ENV } from '../../helpers/fixtures';

// Which address a request is counted under (api/client-address.ts), and what TRUSTED_PROXIES accepts.

const request = (peer: string | undefined, forwardedFor?: string) =>
  ({
    socket: { remoteAddress: peer },
    connection: { remoteAddress: peer },
    headers: forwardedFor === undefined ? {} : { 'x-forwarded-for': forwardedFor },
  }) as unknown as IncomingMessage;

const balancer = compileTrust(['10.0.0.5']);
const twoTiers = compileTrust(['10.0.0.0/24', 'loopback']);

test('without trusted proxies the peer is the client, whatever X-Forwarded-For says', (t) => {
  const none = compileTrust([]);
  t.is(clientAddressOf(request('198.51.100.1'), none), '198.51.100.1');
  t.is(clientAddressOf(request('198.51.100.1', '203.0.113.9'), none), '198.51.100.1');
});

test('from a trusted balancer the client is the address it appended', (t) => {
  t.is(clientAddressOf(request('10.0.0.5', '198.51.100.1'), balancer), '198.51.100.1');
  t.is(clientAddressOf(request('10.0.0.5', '2001:db8::1'), balancer), '2001:db8::1');
  // Without the header the balancer itself is all there is to count.
  t.is(clientAddressOf(request('10.0.0.5'), balancer), '10.0.0.5');
});

test('entries a client wrote in front of the real one are never taken', (t) => {
  t.is(clientAddressOf(request('10.0.0.5', '1.2.3.4, 5.6.7.8, 198.51.100.1'), balancer), '198.51.100.1');
  // Even when the client writes the balancer's own address: the right-most untrusted hop wins.
  t.is(clientAddressOf(request('10.0.0.5', '10.0.0.5, 198.51.100.1'), balancer), '198.51.100.1');
});

test('the header counts only when the peer is a trusted proxy', (t) => {
  t.is(clientAddressOf(request('198.51.100.66', '198.51.100.1'), balancer), '198.51.100.66');
  t.is(clientAddressOf(request('10.0.0.6', '198.51.100.1'), balancer), '10.0.0.6', 'a neighbour is not the balancer');
});

test('several trusted tiers are walked through, from the right', (t) => {
  // CDN → balancer (10.0.0.0/24) → a sidecar on loopback → the API.
  t.is(clientAddressOf(request('127.0.0.1', '9.9.9.9, 198.51.100.1, 10.0.0.7'), twoTiers), '198.51.100.1');
  t.is(clientAddressOf(request('::ffff:127.0.0.1', '198.51.100.1'), twoTiers), '198.51.100.1', 'an IPv4-mapped peer');
});

test('a port after the address is dropped; garbage gives way to the hop that forwarded it', (t) => {
  t.is(clientAddressOf(request('10.0.0.5', '198.51.100.1:51234'), balancer), '198.51.100.1');
  t.is(clientAddressOf(request('10.0.0.5', '[2001:db8::1]:443'), balancer), '2001:db8::1');
  t.is(clientAddressOf(request('10.0.0.5', 'unknown'), balancer), '10.0.0.5');
  t.is(clientAddressOf(request('10.0.0.5', `x${'y'.repeat(500)}`), balancer), '10.0.0.5');
});

test('a request whose socket is gone has no address', (t) => {
  t.is(clientAddressOf(request(undefined, '198.51.100.1'), balancer), '');
});

const env = API_ENV;

test('TRUSTED_PROXIES takes addresses, CIDR ranges and the named ranges, by commas or spaces', (t) => {
  t.deepEqual(loadApiConfig(env).trustedProxies, []);
  t.deepEqual(loadApiConfig({ ...env, TRUSTED_PROXIES: '' }).trustedProxies, []);
  t.deepEqual(loadApiConfig({ ...env, TRUSTED_PROXIES: '10.0.0.5, 10.1.0.0/16 fd00::/8,loopback' }).trustedProxies, [
    '10.0.0.5',
    '10.1.0.0/16',
    'fd00::/8',
    'loopback',
  ]);
});

test('a hop count, a range of everyone or a bad entry in TRUSTED_PROXIES stops the API naming it', (t) => {
  const refused = (value: string) =>
    t.throws(() => loadApiConfig({ ...env, TRUSTED_PROXIES: value }), { instanceOf: ConfigError }).message;
  t.regex(refused('1'), /TRUSTED_PROXIES takes the balancers' addresses or ranges, not a hop count/);
  t.regex(refused('0.0.0.0/0'), /TRUSTED_PROXIES: "0\.0\.0\.0\/0" would trust every address/);
  t.regex(refused('::/0'), /TRUSTED_PROXIES: "::\/0" would trust every address/);
  t.regex(refused('10.0.0.0/33'), /TRUSTED_PROXIES: "10\.0\.0\.0\/33" has no valid prefix length/);
  t.regex(refused('balancer.internal'), /TRUSTED_PROXIES: "balancer\.internal" is not an IP address/);
  t.regex(refused('10.0.0.5, 0x7f.1'), /TRUSTED_PROXIES: "0x7f\.1" is not an IP address/);
});
