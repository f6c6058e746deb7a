import { randomBytes, type webcrypto } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { createRemoteJWKSet, errors, jwtVerify, SignJWT, type JWTVerifyGetKey } from 'jose';
import { hmacCryptoKey } from './hs256-key';

// Buyer tokens: JWTs whose `sub` is the buyer id and which carry an `exp`. The merchant's login
// issues them, signed HS256 with BUYER_TOKEN_SECRET or with a key published at BUYER_JWKS_URL; the
// API verifies them. `npm run buyer-token` signs one with the secret, for development and scripts.

export interface BuyerTokenConfig {
  /** HS256 shared secret (at least 32 characters). */
  secret?: string;
  /** A JWKS endpoint whose keys sign the tokens (RS256, ES256, EdDSA, ...). */
  jwksUrl?: string;
  /** Checked when set. */
  issuer?: string;
  audience?: string;
}

export const MIN_SECRET_LENGTH = 32;
/** A buyer id as the rest of the system stores it: 1 to 128 printable characters. */
const BUYER_ID = /^[^\p{Cc}\p{Cs}]{1,128}$/u;

export class BadBuyerToken extends Error {}

/**
 * The key set at BUYER_JWKS_URL could not be had (the identity provider down, slow, or not answering
 * 200 with a key set): no verdict on the token, which may well be good. Not a bad token: the buyer
 * keeps their sign-in and is asked to try again.
 */
export class BuyerKeysUnavailable extends Error {}

/** jose's errors that are the key set's fetch failing, not the token. */
const KEY_SET_OUTAGES = new Set(['ERR_JWKS_TIMEOUT', 'ERR_JWKS_INVALID', 'ERR_JOSE_GENERIC']);

export interface BuyerVerifier {
  /** The buyer id of a valid token; throws BadBuyerToken (with why) for anything else. */
  verify(token: string): Promise<string>;
}

export function createBuyerVerifier(config: BuyerTokenConfig): BuyerVerifier {
  if (!config.jwksUrl && (config.secret ?? '').length < MIN_SECRET_LENGTH) {
    throw new Error(`a buyer token secret needs at least ${MIN_SECRET_LENGTH} characters`);
  }
  // The secret imported once, not by jose for every token (every buyer request verifies one).
  const key: Promise<webcrypto.CryptoKey> | JWTVerifyGetKey = config.jwksUrl
    ? createRemoteJWKSet(new URL(config.jwksUrl))
    : hmacCryptoKey(new TextEncoder().encode(config.secret ?? ''));
  const options = {
    requiredClaims: ['sub', 'exp'],
    ...(config.jwksUrl ? {} : { algorithms: ['HS256'] }),
    ...(config.issuer ? { issuer: config.issuer } : {}),
    ...(config.audience ? { audience: config.audience } : {}),
  };
  return {
    async verify(token) {
      let sub: unknown;
      try {
        const { payload } =
          typeof key === 'function' ? await jwtVerify(token, key, options) : await jwtVerify(token, await key, options);
        sub = payload.sub;
      } catch (err) {
        const outage = !(err instanceof errors.JOSEError) || KEY_SET_OUTAGES.has(err.code);
        if (config.jwksUrl && outage) throw new BuyerKeysUnavailable((err as Error).message);
        throw new BadBuyerToken((err as Error).message);
      }
      // A claim is whatever the issuer wrote: a number would pass the pattern once coerced to text.
      if (typeof sub !== 'string' || !BUYER_ID.test(sub)) {
        throw new BadBuyerToken(
          'the token has no usable sub (buyer id): it must be a string of 1 to 128 printable characters',
        );
      }
      return sub;
    },
  };
}

/** Signs a buyer token with the HS256 secret (development, tests, scripts). */
export async function signBuyerToken(
  secret: string,
  buyerId: string,
  o: { ttlSeconds?: number; issuer?: string; audience?: string } = {},
): Promise<string> {
  let jwt = new SignJWT({})
    .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
    .setSubject(buyerId)
    .setIssuedAt()
    .setExpirationTime(Math.floor(Date.now() / 1000) + (o.ttlSeconds ?? 3600));
  if (o.issuer) jwt = jwt.setIssuer(o.issuer);
  if (o.audience) jwt = jwt.setAudience(o.audience);
  return jwt.sign(new TextEncoder().encode(secret));
}

/** Where `npm start` keeps the development buyer-token secret, inside its data folder. */
export const DEV_SECRET_FILE = 'buyer-token-secret';

/**
 * The development secret of one data folder: read from `<dataDir>/buyer-token-secret`, or made
 * (32 random bytes, hex) and written there (mode 0600) the first time, so tokens outlive a restart.
 */
export function devBuyerSecret(dataDir: string, create = true): string | undefined {
  const file = path.join(dataDir, DEV_SECRET_FILE);
  if (fs.existsSync(file)) return fs.readFileSync(file, 'utf8').trim();
  if (!create) return undefined;
  const secret = randomBytes(32).toString('hex');
  fs.mkdirSync(dataDir, { recursive: true });
  fs.writeFileSync(file, `${secret}\n`, { mode: 0o600 });
  return secret;
}
