import type { Challenge, Solution } from 'altcha-lib';
import { deriveKey } from 'altcha-lib/algorithms/pbkdf2';

// A bot's solver for the bot check: it tries only the counters it believes the server can draw,
// where the `altcha` widget tries 0, 1, 2, ... until one solves. A bot that has read the server's
// code starts where its draw starts; if the draw starts at 0 too, skipping buys it nothing.

/** What a search of counters `from` to `to` found (null: none of them solves), and how many it tried. */
export interface Search {
  solution: Solution | null;
  attempts: number;
}

/** Tries counters `from` to `to` in order, each one PBKDF2 derivation, as altcha-lib's solver does (uint32 counters). */
export async function searchCounters(challenge: Challenge, from: number, to: number): Promise<Search> {
  const { nonce, salt, keyPrefix } = challenge.parameters;
  const nonceBytes = Buffer.from(nonce, 'hex');
  const saltBytes = Buffer.from(salt, 'hex');
  const password = Buffer.alloc(nonceBytes.length + 4);
  nonceBytes.copy(password);
  for (let counter = from; counter <= to; counter++) {
    password.writeUInt32BE(counter, nonceBytes.length);
    const { derivedKey } = await deriveKey(challenge.parameters, saltBytes, password);
    const hex = Buffer.from(derivedKey).toString('hex');
    if (hex.startsWith(keyPrefix)) return { solution: { counter, derivedKey: hex }, attempts: counter - from + 1 };
  }
  return { solution: null, attempts: Math.max(0, to - from + 1) };
}
