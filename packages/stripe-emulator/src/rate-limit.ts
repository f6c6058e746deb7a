import { StripeApiError } from './errors';

// Stripe's rate limits (docs.stripe.com/rate-limits), as a sandbox account meets them: a limit on
// the whole account and one per endpoint (method and path, ids left out), each in requests per
// second; past either one the request is refused with 429 `rate_limit` and a
// `Stripe-Rate-Limited-Reason` header, and nothing is done. Live mode allows 100/s on the account;
// the emulator is a test-mode account, so both default to the sandbox's 25/s.

/** The sandbox figures: 25 requests a second for the account, and 25 for each endpoint. */
export const SANDBOX_RATE_LIMIT = { accountPerSecond: 25, endpointPerSecond: 25 } as const;

export interface RateLimitSettings {
  /** Requests a second for the whole account; 0: no limit. */
  accountPerSecond: number;
  /** Requests a second for each endpoint; 0: no limit. */
  endpointPerSecond: number;
}

/**
 * `STRIPE_EMULATOR_RATE_LIMIT`: unset is the sandbox's 25/s; `0` turns limiting off; `N` sets both
 * limits to N a second; `N/M` the account's to N and each endpoint's to M.
 */
export function parseRateLimit(value: string | undefined): RateLimitSettings {
  if (value === undefined || value.trim() === '') return { ...SANDBOX_RATE_LIMIT };
  const match = /^\s*(\d+(?:\.\d+)?)\s*(?:\/\s*(\d+(?:\.\d+)?)\s*)?$/.exec(value);
  if (!match) {
    throw new Error(
      `STRIPE_EMULATOR_RATE_LIMIT=${value}: expected requests per second (25), account/endpoint (100/25), or 0 for none`,
    );
  }
  const account = Number(match[1]);
  return { accountPerSecond: account, endpointPerSecond: match[2] === undefined ? account : Number(match[2]) };
}

/**
 * A token bucket: holds up to one second of requests and refills continuously, so a client pacing
 * itself at the limit is never refused while a burst beyond it is.
 */
class Bucket {
  private tokens: number;
  private at: number;

  constructor(
    private readonly perSecond: number,
    now: number,
  ) {
    this.tokens = perSecond;
    this.at = now;
  }

  /** Refills for the time since the last look; true when a whole token is there. */
  ready(now: number): boolean {
    this.tokens = Math.min(this.perSecond, this.tokens + ((now - this.at) / 1000) * this.perSecond);
    this.at = now;
    return this.tokens >= 1;
  }

  take(): void {
    this.tokens -= 1;
  }
}

export interface EndpointCounts {
  endpoint: string;
  served: number;
  limited: number;
}

/** The account's limiter: one bucket for the account, one per endpoint, and what each let through. */
export class RateLimiter {
  private settings: RateLimitSettings;
  private account?: Bucket;
  private readonly endpoints = new Map<string, Bucket>();
  private readonly counts = new Map<string, EndpointCounts>();

  constructor(
    settings: RateLimitSettings,
    private readonly now: () => number = Date.now,
  ) {
    this.settings = settings;
  }

  get current(): RateLimitSettings {
    return { ...this.settings };
  }

  /** New limits, with full buckets (the counts are kept). */
  configure(settings: RateLimitSettings): void {
    this.settings = settings;
    this.account = undefined;
    this.endpoints.clear();
  }

  /** Counts the request against both limits, or throws Stripe's 429 naming which one it passed. */
  admit(method: string, path: string): void {
    const endpoint = endpointOf(method, path);
    const counts = this.countsOf(endpoint);
    const now = this.now();
    const { accountPerSecond, endpointPerSecond } = this.settings;
    const account = accountPerSecond > 0 ? (this.account ??= new Bucket(accountPerSecond, now)) : undefined;
    let perEndpoint: Bucket | undefined;
    if (endpointPerSecond > 0) {
      perEndpoint = this.endpoints.get(endpoint);
      if (!perEndpoint) this.endpoints.set(endpoint, (perEndpoint = new Bucket(endpointPerSecond, now)));
    }
    // Both are looked at before either is spent: a refused request costs neither limit anything.
    const endpointReady = perEndpoint?.ready(now) ?? true;
    const accountReady = account?.ready(now) ?? true;
    if (!endpointReady || !accountReady) {
      counts.limited++;
      throw rateLimited(endpointReady ? 'global-rate' : 'endpoint-rate');
    }
    perEndpoint?.take();
    account?.take();
    counts.served++;
  }

  /** What each endpoint was served and refused so far, busiest first. */
  report(): { settings: RateLimitSettings; limited: number; endpoints: EndpointCounts[] } {
    const endpoints = [...this.counts.values()].sort((a, b) => b.served + b.limited - (a.served + a.limited));
    return {
      settings: this.current,
      limited: endpoints.reduce((n, e) => n + e.limited, 0),
      endpoints: endpoints.map((e) => ({ ...e })),
    };
  }

  resetCounts(): void {
    this.counts.clear();
  }

  private countsOf(endpoint: string): EndpointCounts {
    let c = this.counts.get(endpoint);
    if (!c) this.counts.set(endpoint, (c = { endpoint, served: 0, limited: 0 }));
    return c;
  }
}

/**
 * The endpoint a request is counted against: its method and path with object ids (`cs_…`, `pi_…`,
 * `re_…`: a prefix, an underscore, the rest) replaced by `:id`, so every session's expire is one endpoint.
 */
export function endpointOf(method: string, path: string): string {
  const template = path
    .split('?')[0]
    .split('/')
    // An id is a prefix and a random part with digits or capitals (pi_3Nx…, cs_test_a1…); a resource
    // name with an underscore (payment_intents) has neither and stays.
    .map((segment) => (/^[a-z]+_[A-Za-z0-9_]+$/.test(segment) && /[0-9A-Z]/.test(segment) ? ':id' : segment))
    .join('/');
  return `${method.toUpperCase()} ${template}`;
}

function rateLimited(reason: 'global-rate' | 'endpoint-rate'): StripeApiError {
  const error = new StripeApiError(
    429,
    'invalid_request_error',
    reason === 'endpoint-rate'
      ? 'Request rate limit exceeded for this endpoint. Learn more about rate limits here https://stripe.com/docs/rate-limits.'
      : 'Request rate limit exceeded. Learn more about rate limits here https://stripe.com/docs/rate-limits.',
    { code: 'rate_limit' },
    false,
  );
  error.headers = { 'Stripe-Rate-Limited-Reason': reason };
  return error;
}
