import type Koa from 'koa';
import { RateLimiterMemory, RateLimiterRes } from 'rate-limiter-flexible';
import { isPagePath } from './page-paths';
import { Problem } from './problem';

// Rate limits on the purchase routes, per buyer and per client IP, and on reads of the buyer's pages
// and issues of bot-check challenges, per client IP, kept in this process's memory
// (rate-limiter-flexible): with N API processes behind a balancer a client gets up to N times the
// limit, which is still a cap on what one bot can make the sagas, Stripe and the database's pool do.

export interface RateLimitConfig {
  /** Purchase requests one buyer may make per minute; 0 turns the limit off. */
  perBuyerPerMinute: number;
  /** Purchase requests one client IP may make per second; 0 turns the limit off. */
  perIpPerSecond: number;
  /** Page reads (GET of the buyer's pages) one client IP may make per second; 0 or absent turns the limit off. */
  pagesPerIpPerSecond?: number;
  /**
   * Bot-check challenges one client IP may be issued per second; 0 or absent turns the limit off.
   * Issuing one costs a PBKDF2 derivation, so an unlimited public route would let one client spend
   * the API's CPU for nothing.
   */
  challengesPerIpPerSecond?: number;
}

export interface RateLimits {
  /** Counts one request; throws 429 `rate-limited` with Retry-After when the buyer or the IP is over. */
  take(buyerId: string, ip: string): Promise<void>;
  /** Counts one page read; throws 429 `rate-limited` with Retry-After when the IP is over. */
  takePage(ip: string): Promise<void>;
  /** Counts one challenge issued; throws 429 `rate-limited` with Retry-After when the IP is over. */
  takeChallenge(ip: string): Promise<void>;
}

export function createRateLimits(config: RateLimitConfig): RateLimits {
  const byBuyer = config.perBuyerPerMinute
    ? new RateLimiterMemory({ keyPrefix: 'buyer', points: config.perBuyerPerMinute, duration: 60 })
    : null;
  const byIp = config.perIpPerSecond
    ? new RateLimiterMemory({ keyPrefix: 'ip', points: config.perIpPerSecond, duration: 1 })
    : null;
  const byIpPages = config.pagesPerIpPerSecond
    ? new RateLimiterMemory({ keyPrefix: 'page-ip', points: config.pagesPerIpPerSecond, duration: 1 })
    : null;
  const byIpChallenges = config.challengesPerIpPerSecond
    ? new RateLimiterMemory({ keyPrefix: 'challenge-ip', points: config.challengesPerIpPerSecond, duration: 1 })
    : null;
  const consume = async (limiter: RateLimiterMemory | null, key: string, who: string, what = 'purchase requests') => {
    if (!limiter) return;
    try {
      await limiter.consume(key);
    } catch (err) {
      if (!(err instanceof RateLimiterRes)) throw err;
      const seconds = Math.max(1, Math.ceil(err.msBeforeNext / 1000));
      throw new Problem(
        429,
        'rate-limited',
        `too many ${what} from this ${who}; retry in ${seconds} s`,
        {},
        {
          'Retry-After': String(seconds),
        },
      );
    }
  };
  return {
    async take(buyerId, ip) {
      await consume(byIp, ip, 'address');
      await consume(byBuyer, buyerId, 'buyer');
    },
    async takePage(ip) {
      await consume(byIpPages, ip, 'address', 'page requests');
    },
    async takeChallenge(ip) {
      await consume(byIpChallenges, ip, 'address', 'bot-check challenges');
    },
  };
}

/**
 * The page-read limit on every GET (and HEAD) of the buyer's pages: beyond it 429 `rate-limited`
 * with Retry-After, which api/page-errors.ts (in front of this) answers as a page in words.
 */
export function limitPageReads(rateLimits: RateLimits | undefined): Koa.Middleware {
  return async (ctx, next) => {
    if (rateLimits && (ctx.method === 'GET' || ctx.method === 'HEAD') && isPagePath(ctx.path)) {
      await rateLimits.takePage(ctx.ip);
    }
    await next();
  };
}
