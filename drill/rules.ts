// The drop's rules as the drill's buyers meet them, when the crowd has bots (`--mix bot=<share>`):
// the product has the bot check (a proof of work per join or purchase) and a limit per shipping
// address. A human solves each challenge as the `altcha` widget would (altcha-lib's solver) and ships
// to an address of its own; a bot farm's account sends no solution, or one a human already spent,
// and every bot ships to the farm's one address. The report counts what each rule stopped.
import { solveChallenge, type Challenge } from 'altcha-lib';
import { deriveKey } from 'altcha-lib/algorithms/pbkdf2';
import { sleep, type DrillHttp } from './http';
import type { BuyerRecord } from './recorder';

/** What the drill's product is created with when the crowd has bots. */
export const RULES_PRODUCT = { botCheck: true, maxPerAddress: 1, shippingCountries: ['FR'] } as const;

export interface Shipping {
  name: string;
  address: { line1: string; city: string; postal_code: string; country: string };
}

/** The farm's address, written a little differently by each account (the normalisation sees through it). */
export function farmAddress(n: number): Shipping {
  const line1 = ['1 Rue du Moulin', '1, rue du moulin', '1 RUE DU MOULIN.'][n % 3];
  return { name: `Account ${n}`, address: { line1, city: 'Lille', postal_code: '59000', country: 'FR' } };
}

export function humanAddress(n: number): Shipping {
  return {
    name: `Buyer ${n}`,
    address: { line1: `${n + 1} Avenue de la Foule`, city: 'Lyon', postal_code: '69003', country: 'FR' },
  };
}

/** How a buyer ended when a rule stopped it: its outcome starts with this. */
export const STOPPED_BY_BOT_CHECK = 'stopped_bot_check_';

export class SaleRules {
  /** Solutions humans have spent: what a farm's account replays. */
  private readonly spent: string[] = [];
  /** How many challenges the humans solved, and the attempts (PBKDF2 derivations) that took in all. */
  solved = 0;
  attempts = 0;

  constructor(
    /** The product has the rules (the crowd has bots). */
    readonly on: boolean,
    private readonly http: DrillHttp,
  ) {}

  /** The `Altcha` header a buyer sends with a join or a purchase; undefined: none (no rules, or a bot without). */
  async payloadFor(b: BuyerRecord, rand: () => number): Promise<string | undefined> {
    if (!this.on) return undefined;
    if (b.behaviour === 'bot') {
      // Half the farm sends none; half replays a solution a human spent (waiting until there is one).
      if (rand() < 0.5) return undefined;
      for (const until = Date.now() + 20_000; !this.spent.length && Date.now() < until;) await sleep(100);
      return this.spent[Math.floor(rand() * this.spent.length)];
    }
    const r = await this.http.call('GET', '/v1/bot-check/challenge', '/v1/bot-check/challenge');
    const challenge = r.body as unknown as Challenge;
    const solution = await solveChallenge({ challenge, deriveKey });
    this.attempts += (solution?.counter ?? 0) + 1;
    this.solved++;
    return Buffer.from(JSON.stringify({ challenge, solution })).toString('base64');
  }

  /** A human's solution was accepted (its request passed): a farm may replay it from now on. */
  accepted(b: BuyerRecord, payload: string | undefined): void {
    if (payload && b.behaviour !== 'bot') this.spent.push(payload);
  }

  /** Where this buyer ships, when the product collects addresses. */
  shippingFor(b: BuyerRecord, n: number): Shipping | undefined {
    if (!this.on) return undefined;
    return b.behaviour === 'bot' ? farmAddress(n) : humanAddress(n);
  }
}

/** What each rule stopped, for the report: bots and humans apart. */
export function ruleCounts(buyers: BuyerRecord[]) {
  const stopped = (b: BuyerRecord) =>
    b.outcome?.startsWith(STOPPED_BY_BOT_CHECK)
      ? `bot check: ${b.outcome.slice(STOPPED_BY_BOT_CHECK.length)}`
      : b.status === 'refunded' && /limit per address/.test(b.refund?.reason ?? '')
        ? 'address limit'
        : null;
  const count = (list: BuyerRecord[]) => {
    const by: Record<string, number> = {};
    for (const b of list) {
      const rule = stopped(b) ?? 'not stopped';
      by[rule] = (by[rule] ?? 0) + 1;
    }
    return by;
  };
  return {
    bots: count(buyers.filter((b) => b.behaviour === 'bot')),
    humans: count(buyers.filter((b) => b.behaviour !== 'bot')),
  };
}
