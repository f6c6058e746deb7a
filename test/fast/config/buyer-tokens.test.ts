import http from 'node:http';
import type { AddressInfo } from 'node:net';
import test from 'ava';
import { exportJWK, generateKeyPair, SignJWT } from 'jose';
import { BadBuyerToken, BuyerKeysUnavailable, createBuyerVerifier } from '../../../config/buyer-tokens';

// Buyer tokens from an identity provider's key set (BUYER_JWKS_URL): a token the keys do not bear
// out is a bad token (401, the page's sign-in forgotten), while a key set out of reach (down, an
// error status, not a key set) is no verdict on the token: the buyer keeps their sign-in.

async function keyServer(answer: (res: http.ServerResponse) => void) {
  const server = http.createServer((_req, res) => answer(res));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/jwks`;
  return { url, close: () => new Promise<void>((r) => server.close(() => r())) };
}

test('a key set out of reach is no verdict on the token; a token the keys refuse is a bad one', async (t) => {
  const { publicKey, privateKey } = await generateKeyPair('RS256');
  const jwk = { ...(await exportJWK(publicKey)), kid: 'k1', alg: 'RS256' };
  const sign = (sub: string, key = privateKey) =>
    new SignJWT({ sub }).setProtectedHeader({ alg: 'RS256', kid: 'k1' }).setExpirationTime('1h').sign(key);
  const token = await sign('ann');
  const good = await keyServer((res) =>
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ keys: [jwk] })),
  );
  const down = await keyServer((res) => res.writeHead(503).end('maintenance'));
  const notJson = await keyServer((res) => res.writeHead(200, { 'content-type': 'text/html' }).end('<html>'));
  const closed = await keyServer(() => {});
  await closed.close();
  try {
    const verifier = (url: string) => createBuyerVerifier({ jwksUrl: url });
    t.is(await verifier(good.url).verify(token), 'ann');
    const stranger = (await generateKeyPair('RS256')).privateKey;
    await t.throwsAsync(verifier(good.url).verify(await sign('eve', stranger)), { instanceOf: BadBuyerToken });
    await t.throwsAsync(verifier(good.url).verify('not-a-token'), { instanceOf: BadBuyerToken });
    for (const out of [down.url, notJson.url, closed.url]) {
      await t.throwsAsync(verifier(out).verify(token), { instanceOf: BuyerKeysUnavailable }, out);
    }
  } finally {
    await Promise.all([good.close(), down.close(), notJson.close()]);
  }
});
