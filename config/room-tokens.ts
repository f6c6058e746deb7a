import { createCipheriv, createDecipheriv, createHmac, createSecretKey, timingSafeEqual } from 'node:crypto';
import { jwtVerify, SignJWT } from 'jose';
import { LRUCache } from 'lru-cache';
import { hmacCryptoKey } from './hs256-key';

// The waiting room's two signed things. A ticket (the buyer's place in line, in the queue URL) is
// HMAC-signed, so a poll verifies it without a database read, and its claims are encrypted: the URL
// (in access logs, browser history, a shared link) does not show the buyer's id, which may be an
// email address. An admission token is a short-lived
// JWT bound to the buyer and SKU, which POST /v1/purchases checks the same way. Both keys derive
// from one secret (ROOM_TOKEN_SECRET, else BUYER_TOKEN_SECRET), each for its own use, so a ticket
// can never pass for an admission.

/** What a ticket carries: enough to answer a poll from the serving counter alone. */
export interface TicketClaims {
  sku: string;
  buyerId: string;
  ticketId: string;
  /** The place in line; null for a ticket of the pre-queue (places are given at the opening). */
  place: number | null;
}

/** What an admission token grants: one purchase of `sku` by `buyerId` until `expiresAt`. */
export interface AdmissionClaims {
  sku: string;
  buyerId: string;
  ticketId: string;
  expiresAt: Date;
}

export interface RoomTokens {
  signTicket(c: TicketClaims): string;
  /** The claims of a ticket this secret signed; null for anything else (forged, altered, malformed). */
  readTicket(ticket: string): TicketClaims | null;
  signAdmission(c: AdmissionClaims & { admittedAt: Date }): Promise<string>;
  /** The claims of a valid, unexpired admission token; null for anything else. */
  verifyAdmission(token: string): Promise<AdmissionClaims | null>;
}

const AUDIENCE = 'flash-sale:admission';
/** The first byte of a sealed ticket's payload (one signed before tickets were sealed starts with `[`). */
const SEALED = 2;
const IV_BYTES = 16;
/** A sealed ticket's claims are padded to a multiple of this many characters. */
const PAD_TO = 32;
/** A ticket's MAC, truncated to 128 bits: a forgery needs 2^128 tries. */
const MAC_BYTES = 16;
/**
 * Tickets a process remembers as verified: a buyer polls the same ticket a dozen times or more, and
 * under a crowd each MAC took about 25 µs (a tenth of a poll's CPU). The most recently read are kept.
 */
const VERIFIED_TICKETS = 50_000;

/** The room's secret when none is configured: derived from the buyer-token secret every API process shares. */
export function roomSecretFromBuyerSecret(buyerSecret: string): string {
  return createHmac('sha256', buyerSecret).update('flash-sale waiting room').digest('hex');
}

/**
 * `clock`: the API's "now" (Postgres's, store/clock.ts) that an admission's `exp` is checked
 * against: the admitter stamped it by Postgres's clock. `sealed` (default true): tickets are signed
 * with their claims encrypted; false signs them in the clear, as API processes before 1.7 read them.
 */
export function createRoomTokens(
  secret: string,
  clock: { now(): number } = { now: () => Date.now() },
  opts: { sealed?: boolean } = {},
): RoomTokens {
  const sealed = opts.sealed ?? true;
  // Keys made once: Node 24's createHmac spends about 20 µs telling a raw Buffer from a KeyObject on
  // every call (a poll's ticket is read each time), and jose imports a raw key for every token.
  const ticketKey = createSecretKey(createHmac('sha256', secret).update('ticket').digest());
  const admissionKey = hmacCryptoKey(createHmac('sha256', secret).update('admission').digest());
  const mac = (payload: string) => createHmac('sha256', ticketKey).update(payload).digest().subarray(0, MAC_BYTES);
  // Encrypt-then-MAC: AES-256-CTR under a key of its own, its IV derived from the claims (the same
  // claims make the same ticket: a buyer who joins again gets the ticket they have).
  const cipherKey = createHmac('sha256', secret).update('ticket-cipher').digest();
  const ivKey = createSecretKey(createHmac('sha256', secret).update('ticket-iv').digest());
  const seal = (json: string): Buffer => {
    // Padded with spaces to a whole number of blocks, so a ticket's length says little of the buyer's id.
    const claims = json.padEnd(Math.ceil(json.length / PAD_TO) * PAD_TO);
    const iv = createHmac('sha256', ivKey).update(claims).digest().subarray(0, IV_BYTES);
    const cipher = createCipheriv('aes-256-ctr', cipherKey, iv);
    return Buffer.concat([Buffer.from([SEALED]), iv, cipher.update(claims, 'utf8'), cipher.final()]);
  };
  const open = (bytes: Buffer): unknown[] | null => {
    // Tickets signed before they were sealed (version 1, their claims in the clear) still read.
    if (bytes[0] !== SEALED) {
      const [v, ...claims] = JSON.parse(bytes.toString()) as unknown[];
      return v === 1 ? claims : null;
    }
    const decipher = createDecipheriv('aes-256-ctr', cipherKey, bytes.subarray(1, 1 + IV_BYTES));
    const text = Buffer.concat([decipher.update(bytes.subarray(1 + IV_BYTES)), decipher.final()]).toString();
    const claims = JSON.parse(text) as unknown;
    return Array.isArray(claims) ? (claims as unknown[]) : null;
  };
  // Only tickets that verified: the same string again is the same claims (the claims are never changed).
  const verified = new LRUCache<string, TicketClaims>({ max: VERIFIED_TICKETS });
  const verify = (ticket: string): TicketClaims | null => {
    const [payload, sig, ...rest] = ticket.split('.');
    if (!payload || !sig || rest.length) return null;
    const given = Buffer.from(sig, 'base64url');
    const want = mac(payload);
    if (given.length !== want.length || !timingSafeEqual(given, want)) return null;
    try {
      const [sku, buyerId, ticketId, place] = open(Buffer.from(payload, 'base64url')) ?? [];
      if (typeof sku !== 'string' || typeof buyerId !== 'string' || typeof ticketId !== 'string') return null;
      return Object.freeze({ sku, buyerId, ticketId, place: typeof place === 'number' ? place : null });
    } catch {
      return null;
    }
  };

  return {
    signTicket(c) {
      const claims = [c.sku, c.buyerId, c.ticketId, c.place];
      const bytes = sealed ? seal(JSON.stringify(claims)) : Buffer.from(JSON.stringify([1, ...claims]));
      const payload = bytes.toString('base64url');
      return `${payload}.${mac(payload).toString('base64url')}`;
    },
    readTicket(ticket) {
      const known = verified.get(ticket);
      if (known) return known;
      const claims = verify(ticket);
      if (claims) verified.set(ticket, claims);
      return claims;
    },
    async signAdmission(c) {
      return new SignJWT({ sku: c.sku })
        .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
        .setSubject(c.buyerId)
        .setJti(c.ticketId)
        .setAudience(AUDIENCE)
        .setIssuedAt(Math.floor(c.admittedAt.getTime() / 1000))
        .setExpirationTime(Math.floor(c.expiresAt.getTime() / 1000))
        .sign(await admissionKey);
    },
    async verifyAdmission(token) {
      try {
        const { payload } = await jwtVerify(token, await admissionKey, {
          algorithms: ['HS256'],
          audience: AUDIENCE,
          requiredClaims: ['sub', 'jti', 'exp'],
          currentDate: new Date(clock.now()),
        });
        if (typeof payload.sku !== 'string' || !payload.sub || !payload.jti || !payload.exp) return null;
        return {
          sku: payload.sku,
          buyerId: payload.sub,
          ticketId: payload.jti,
          expiresAt: new Date(payload.exp * 1000),
        };
      } catch {
        return null;
      }
    },
  };
}
