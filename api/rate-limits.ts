import { RateLimiterMemory, RateLimiterRes } from 'rate-limiter-flexible';
import { Problem } from './problem';

// Rate limits on the purchase routes, per buyer and per client IP, kept in this process's memory
// (rate-limiter-flexible): with N API processes behind a balancer a client gets up to N times the
// limit, which is still a cap on what one bot can make the sagas and Stripe do.

export interface RateLimitConfig {
  /** Purchase requests one buyer may make per minute; 0 turns the limit off. */
  perBuyerPerMinute: number;
  /** Purchase requests one client IP may make per second; 0 turns the limit off. */
  perIpPerSecond: number;
}

export interface RateLimits {
  /** Counts one request; throws 429 `rate-limited` with Retry-After when the buyer or the IP is over. */
  take(buyerId: string, ip: string): Promise<void>;
}

export function createRateLimits(config: RateLimitConfig): RateLimits {
  const byBuyer = config.perBuyerPerMinute
    ? new RateLimiterMemory({ keyPrefix: 'buyer', points: config.perBuyerPerMinute, duration: 60 })
    : null;
  const byIp = config.perIpPerSecond
    ? new RateLimiterMemory({ keyPrefix: 'ip', points: config.perIpPerSecond, duration: 1 })
    : null;
  const consume = async (limiter: RateLimiterMemory | null, key: string, who: string) => {
    if (!limiter) return;
    try {
      await limiter.consume(key);
    } catch (err) {
      if (!(err instanceof RateLimiterRes)) throw err;
      const seconds = Math.max(1, Math.ceil(err.msBeforeNext / 1000));
      throw new Problem(
        429,
        'rate-limited',
        `too many purchase requests from this ${who}; retry in ${seconds} s`,
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
  };
}
