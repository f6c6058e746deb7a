import { webcrypto } from 'node:crypto';

/**
 * An HS256 key as WebCrypto holds it, imported once: jose imports a raw key (a Uint8Array) again for
 * every token it signs or verifies, and the API verifies one on every buyer request.
 */
export function hmacCryptoKey(raw: Uint8Array): Promise<webcrypto.CryptoKey> {
  return webcrypto.subtle.importKey('raw', raw, { name: 'HMAC', hash: 'SHA-256' }, false, ['sign', 'verify']);
}
