import { createHmac } from 'node:crypto';
import { createChallenge, randomInt, verifySolution, type Challenge, type Payload } from 'altcha-lib';
import { deriveKey } from 'altcha-lib/algorithms/pbkdf2';
import type { Admissions } from '../store/admission';
import type { Clock } from '../store/clock';
import type { Db } from '../store/db';
import { purgeSpentSolutions, spendSolution } from '../store/bot-checks';
import { Problem } from './problem';

// The bot check of products with `botCheck: true`: an ALTCHA proof of work (altcha-lib v2, no
// third-party service, no tracking). GET /v1/bot-check/challenge hands out a signed challenge; the
// solution (the base64 payload the `altcha` widget produces) comes back on the join (a product with
// a room) or the purchase (without one) and is spent in Postgres, so it is good once on every
// process. docs/waiting-room.md ("The bot check") has the cost a phone and a bot pay.

/** Each attempt is one PBKDF2-SHA-256 of this many iterations (the widget's default algorithm, native in browsers). */
export const BOT_CHECK_ALGORITHM = 'PBKDF2/SHA-256';
export const BOT_CHECK_COST = 1000;
/** How long a challenge may be solved and spent. */
export const CHALLENGE_SECONDS = 600;
/** How often one process forgets the spent solutions of expired challenges. */
const PURGE_EVERY_MS = 60_000;

/** Why a request did not pass: no solution, one that does not verify, one too old, one already spent. */
export type BotCheckReason = 'missing' | 'invalid' | 'expired' | 'reused';

export interface BotCheckOptions {
  /** BOT_CHECK_SECRET: signs challenges (and, derived from it, their keys). */
  secret: string;
  /** BOT_CHECK_MAX_NUMBER: the counter a solver must reach is drawn from [0, maxNumber]. */
  maxNumber: number;
}

function failed(reason: BotCheckReason, detail: string): Problem {
  return new Problem(403, 'bot-check-failed', `bot check ${reason}: ${detail}`, { reason });
}

/** The widget's payload: base64 of the JSON `{challenge, solution}`; null when it is not one. */
function parsePayload(text: string): Payload | null {
  try {
    const p = JSON.parse(Buffer.from(text, 'base64').toString('utf8')) as Payload;
    const params = p?.challenge?.parameters;
    if (typeof p.challenge.signature !== 'string' || typeof params?.expiresAt !== 'number') return null;
    return typeof p.solution === 'object' && p.solution !== null ? p : null;
  } catch {
    return null;
  }
}

export class BotCheck {
  private readonly keySecret: string;
  private lastPurge = 0;

  constructor(
    private readonly db: Db,
    /** Postgres's clock (store/clock.ts): a challenge expires by the same clock on every process. */
    private readonly clock: Clock,
    private readonly options: BotCheckOptions,
  ) {
    // A second key for the derived keys' signatures: verifying a solution is then one HMAC, no derivation.
    this.keySecret = createHmac('sha256', options.secret).update('altcha key signatures').digest('hex');
  }

  /** A new signed challenge (deterministic mode: its counter is known to us, so verifying it costs one HMAC). */
  async challenge(): Promise<Challenge> {
    return createChallenge({
      algorithm: BOT_CHECK_ALGORITHM,
      cost: BOT_CHECK_COST,
      deriveKey,
      // From 0, where the widget starts: a floor above it would be work the widget does and a bot
      // that read this code skips (from maxNumber / 2 a bot paid a third of a buyer's cost).
      counter: randomInt(this.options.maxNumber, 0),
      expiresAt: Math.floor(this.clock.now() / 1000) + CHALLENGE_SECONDS,
      hmacSignatureSecret: this.options.secret,
      hmacKeySignatureSecret: this.keySecret,
    });
  }

  /**
   * Passes a request that carries a valid, unexpired solution not spent by anything else, and spends
   * it for `spentBy` (the same request again, with the same solution, passes again: a retry). Throws
   * 403 `bot-check-failed` with `reason` otherwise; nothing is written then.
   */
  async pass(payload: string | undefined, spentBy: string): Promise<void> {
    if (!payload) throw failed('missing', 'this product needs a solved challenge (GET /v1/bot-check/challenge)');
    const parsed = parsePayload(payload);
    if (!parsed) throw failed('invalid', 'not an ALTCHA payload (base64 JSON of {challenge, solution})');
    const expiresAt = parsed.challenge.parameters.expiresAt! * 1000;
    const result = await verifySolution({
      challenge: parsed.challenge,
      solution: parsed.solution,
      deriveKey,
      hmacSignatureSecret: this.options.secret,
      hmacKeySignatureSecret: this.keySecret,
    }).catch(() => null);
    if (result?.expired || (result?.verified && expiresAt <= this.clock.now())) {
      throw failed('expired', 'the challenge has expired: solve a new one');
    }
    if (!result?.verified) {
      throw failed(
        'invalid',
        result?.invalidSignature === false
          ? 'the solution does not solve its challenge'
          : 'the challenge is not one this service signed',
      );
    }
    await this.purgeNowAndThen();
    if ((await spendSolution(this.db, parsed.challenge.signature!, spentBy, new Date(expiresAt))) === 'reused') {
      throw failed('reused', 'this solution was already used: solve a new challenge');
    }
  }

  private async purgeNowAndThen(): Promise<void> {
    const now = Date.now();
    if (now - this.lastPurge < PURGE_EVERY_MS) return;
    this.lastPurge = now;
    await purgeSpentSolutions(this.db);
  }
}

/**
 * The bot check where a product asks for it: with a waiting room at the join (`at: 'join'`), without
 * one at the purchase. Products without `botCheck` (and unknown SKUs, answered by the caller) pass.
 */
export async function checkForBots(
  deps: { admissions: Admissions; botCheck: BotCheck },
  at: 'join' | 'purchase',
  o: { sku: string; payload: string | undefined; spentBy: string },
): Promise<void> {
  const rules = await deps.admissions.rulesOf(o.sku);
  if (!rules?.botCheck || rules.room !== (at === 'join')) return;
  await deps.botCheck.pass(o.payload, o.spentBy);
}

/** What a join spends its solution on: the buyer's one ticket of the SKU (joining again is the same ticket). */
export function joinSpender(sku: string, buyerId: string): string {
  return `join:${sku}:${buyerId}`;
}
